<?php
/**
 * Writes the users, ACL and the adapter's credentials file of a DokuWiki instance
 * (used by scripts/backends/dokuwiki.sh start).
 *
 *   php gen_auth.php SITE_DIR SECRETS_FILE [--merge] < spec
 *
 * spec lines ('#' comments allowed), fields separated by '|':
 *   user|<login>|<full name>|<email>|<group,group,...>|<subject or empty>
 *   acl|<scope>|<@group or login>|<permission>
 *
 * - users.auth.php gets `login:bcrypt-hash:Name:email:groups` (bcrypt cost 4: ~1 ms per Basic-auth
 *   check instead of ~67 ms at cost 10). Passwords are random per build and never printed.
 * - acl.auth.php: user and group names are written through DokuWiki's own auth_nameencode();
 *   a plain `chen.hao` would silently never match (it must be `chen%2ehao`).
 * - SECRETS_FILE (mode 0600) maps subject -> {username, password} for every user with a subject.
 * - --merge (scripts/backends/dokuwiki.sh import): the instance's users, ACL lines and credentials
 *   are kept as they are (passwords unchanged, so running adapters keep working); users whose
 *   login is new get an account and a credential, ACL lines not there yet are appended.
 * - Logins and subjects are global to the instance (one users.auth.php, one secrets file for every
 *   company in it). A spec user whose login already exists with OTHER groups, or whose subject the
 *   secrets file already maps to another login, is a collision: all of them are printed (login,
 *   both group sets / both logins) and nothing is written, exit 1. Keeping the old account would
 *   leave the new user on another company's account (it sees none of its own pages, or the other
 *   company's). The same login with the same groups (a re-import) is not a collision.
 */

if ($argc < 3) {
    fwrite(STDERR, "usage: php gen_auth.php SITE_DIR SECRETS_FILE < spec\n");
    exit(2);
}
$site = rtrim(realpath($argv[1]), '/') . '/';
$secretsFile = $argv[2];
$merge = ($argv[3] ?? '') === '--merge';

$_SERVER['HTTP_HOST'] = $_SERVER['HTTP_HOST'] ?? '127.0.0.1';
$_SERVER['SERVER_PORT'] = $_SERVER['SERVER_PORT'] ?? '80';
define('DOKU_INC', $site);
define('NOSESSION', 1);
require_once(DOKU_INC . 'inc/init.php');

$users = [];
$acl = [];
foreach (explode("\n", stream_get_contents(STDIN)) as $n => $line) {
    $line = trim($line);
    if ($line === '' || $line[0] === '#') continue;
    $f = array_map('trim', explode('|', $line));
    if ($f[0] === 'user' && count($f) >= 5) {
        $users[] = ['login' => $f[1], 'name' => $f[2], 'mail' => $f[3],
            'groups' => array_filter(array_map('trim', explode(',', $f[4]))),
            'subject' => $f[5] ?? ''];
    } elseif ($f[0] === 'acl' && count($f) === 4 && ctype_digit($f[3])) {
        $acl[] = ['scope' => $f[1], 'who' => $f[2], 'perm' => (int)$f[3]];
    } else {
        fwrite(STDERR, "gen_auth: spec line " . ($n + 1) . " not understood\n");
        exit(1);
    }
}

function yaml_str(string $s): string
{
    return '"' . addcslashes($s, "\"\\\0..\37") . '"';
}

$authLines = ["# users.auth.php written by scripts/backends/dokuwiki/gen_auth.php",
    "# login:passwordhash:Real Name:email:groups,comma,separated", ""];
$secrets = [];
$known = [];      // logins already in the instance (--merge)
$oldAcl = [];
if ($merge) {
    foreach (@file(DOKU_CONF . 'users.auth.php', FILE_IGNORE_NEW_LINES) ?: [] as $line) {
        if ($line === '' || $line[0] === '#') continue;
        // login:hash:name:mail:groups — the groups are the last field and hold no ':'
        $known[explode(':', $line, 2)[0]] = substr($line, strrpos($line, ':') + 1);
        $authLines[] = $line;
    }
    foreach (@file(DOKU_CONF . 'acl.auth.php', FILE_IGNORE_NEW_LINES) ?: [] as $line) {
        if ($line === '' || $line[0] === '#') continue;
        $oldAcl[] = $line;
    }
    // our own secrets format: `<subject>:` then `  username: "…"` and `  password: "…"`
    $sub = null;
    foreach (@file($secretsFile, FILE_IGNORE_NEW_LINES) ?: [] as $line) {
        if ($line === '' || $line[0] === '#') continue;
        if ($line[0] !== ' ') {
            $sub = stripcslashes(trim(rtrim($line, ':'), '"'));
            $secrets[$sub] = ['username' => '', 'password' => ''];
        } elseif ($sub !== null && preg_match('/^\s+(username|password):\s*"?(.*?)"?\s*$/', $line, $m)) {
            $secrets[$sub][$m[1]] = stripcslashes($m[2]);
        }
    }
}
// Collisions (see the header): checked for every spec user before anything is written.
function group_set(string $csv): array
{
    $g = array_values(array_unique(array_filter(array_map('trim', explode(',', $csv)), 'strlen')));
    sort($g);
    return $g;
}
$conflicts = [];
$seen = $known;                                   // login => groups, existing and earlier in the spec
$owner = array_map(fn($c) => $c['username'], $secrets);   // subject => login
foreach ($users as $u) {
    $groups = implode(',', $u['groups']);
    if (isset($seen[$u['login']])) {
        if (group_set($seen[$u['login']]) !== group_set($groups)) {
            $conflicts[] = "login '{$u['login']}' already exists with groups [" . implode(',', group_set($seen[$u['login']]))
                . "]; the spec gives it [" . implode(',', group_set($groups)) . "]";
        }
        continue;
    }
    $seen[$u['login']] = $groups;
    if ($u['subject'] !== '') {
        if (isset($owner[$u['subject']]) && $owner[$u['subject']] !== $u['login']) {
            $conflicts[] = "subject '{$u['subject']}' (login '{$u['login']}') is already mapped to login '"
                . $owner[$u['subject']] . "' in " . $secretsFile;
        }
        $owner[$u['subject']] = $u['login'];
    }
}
if ($conflicts) {
    fwrite(STDERR, "gen_auth: logins and subjects are shared by every company in this wiki; nothing was written:\n");
    foreach ($conflicts as $c) fwrite(STDERR, "gen_auth:   $c\n");
    fwrite(STDERR, "gen_auth: fix: in your auth.spec give the user a login and a subject (the JWT `sub`) that no other"
        . " company in this wiki uses, e.g. `acme.mei` (and the same subject in your users' tokens);"
        . " or, if the account is yours and you changed its groups on purpose, set the last field of its line in "
        . DOKU_CONF . "users.auth.php to the new groups, then import again\n");
    exit(1);
}

foreach ($users as $u) {
    if (isset($known[$u['login']])) continue;   // --merge: an existing account stays as it is
    $known[$u['login']] = true;                 // a login twice in one spec: its first line counts
    if (!preg_match('/^[a-z0-9._-]+$/', $u['login'])) {
        fwrite(STDERR, "gen_auth: unsupported login '{$u['login']}'\n");
        exit(1);
    }
    // letters and digits only: safe in YAML, URLs and Basic auth without escaping
    $pw = substr(strtr(base64_encode(random_bytes(18)), '+/=', 'xyz'), 0, 20);
    $hash = password_hash($pw, PASSWORD_BCRYPT, ['cost' => 4]);
    // authplain escapes ':' in fields itself; our names and mails contain none
    $authLines[] = implode(':', [$u['login'], $hash, str_replace(':', ' ', $u['name']),
        str_replace(':', ' ', $u['mail']), implode(',', $u['groups'])]);
    if ($u['subject'] !== '') $secrets[$u['subject']] = ['username' => $u['login'], 'password' => $pw];
}

$aclLines = ["# acl.auth.php written by scripts/backends/dokuwiki/gen_auth.php",
    "# <scope> <user or @group, encoded with auth_nameencode> <permission>", ""];
$aclLines = array_merge($aclLines, $oldAcl);
foreach ($acl as $a) {
    $line = $a['scope'] . "\t" . auth_nameencode($a['who'], true) . "\t" . $a['perm'];
    if (!in_array($line, $oldAcl, true)) $aclLines[] = $line;
}

$users_file = DOKU_CONF . 'users.auth.php';
$acl_file = DOKU_CONF . 'acl.auth.php';
file_put_contents($users_file, implode("\n", $authLines) . "\n");
file_put_contents($acl_file, implode("\n", $aclLines) . "\n");
chmod($users_file, 0600);

$y = [];
$y[] = '# DokuWiki credentials for the fedsearch wiki adapter ("mapped" identity mode).';
$y[] = '# Written by scripts/backends/dokuwiki.sh start; passwords are random per instance build';
$y[] = '# (kept across `stop --keep-data` / `start`). Do not log or commit this file.';
$y[] = '#';
$y[] = '# Format: a YAML mapping from the end user\'s subject (JWT `sub`) to the DokuWiki account';
$y[] = '# the adapter uses for that user (HTTP Basic auth on /lib/exe/xmlrpc.php):';
$y[] = '#   <subject>:';
$y[] = '#     username: <dokuwiki login>';
$y[] = '#     password: "<password>"';
$y[] = '# A subject that is not listed has no wiki account: the wiki source is DENIED for it.';
foreach ($secrets as $sub => $c) {
    $y[] = (preg_match('/^[a-z0-9._-]+$/', $sub) ? $sub : yaml_str($sub)) . ':';
    $y[] = '  username: ' . yaml_str($c['username']);
    $y[] = '  password: ' . yaml_str($c['password']);
}
$old = umask(077);
$tmp = $secretsFile . '.tmp';
file_put_contents($tmp, implode("\n", $y) . "\n");
chmod($tmp, 0600);
rename($tmp, $secretsFile);
umask($old);

echo "gen_auth: " . count($users) . " users, " . count($acl) . " ACL lines, " . count($secrets)
    . " credentials in " . $secretsFile . "\n";
