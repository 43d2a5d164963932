<?php
/**
 * Router for `php -S` serving a DokuWiki instance (see scripts/backends/dokuwiki.sh).
 *
 * `php -S` ignores .htaccess, so without this script data/, conf/ (users.auth.php with the password
 * hashes!), bin/, inc/ and vendor/ would be served raw. We refuse (403) every request whose first
 * path segment, after normalisation, is one of those directories. Normalisation: strip the query,
 * percent-decode repeatedly (double/triple encoding), turn backslashes into slashes, resolve `.`
 * and `..`, drop empty segments, compare case-insensitively. Hidden segments (.htaccess, .git) and
 * install.php are refused too. Everything else is handed back to the built-in server
 * (`return false`), which serves static files and runs doku.php / lib/exe/xmlrpc.php itself.
 */

$uri = $_SERVER['REQUEST_URI'] ?? '/';
$path = explode('?', $uri, 2)[0];

function fedsearch_deny(int $code, string $msg)
{
    http_response_code($code);
    header('Content-Type: text/plain; charset=utf-8');
    header('Cache-Control: no-store');
    echo $msg, "\n";
    return true;
}

// Decode until stable (bounded), so %2564ata -> %64ata -> data is caught as well.
for ($i = 0; $i < 5; $i++) {
    $decoded = rawurldecode($path);
    if ($decoded === $path) break;
    $path = $decoded;
}
if ($i === 5 && rawurldecode($path) !== $path) {
    return fedsearch_deny(400, 'Bad Request: too deeply encoded path');
}
if (strpos($path, "\0") !== false || preg_match('/[\x00-\x1f]/', $path)) {
    return fedsearch_deny(400, 'Bad Request');
}

$path = str_replace('\\', '/', $path);
$segments = [];
foreach (explode('/', $path) as $seg) {
    if ($seg === '' || $seg === '.') continue;
    if ($seg === '..') {
        array_pop($segments);
        continue;
    }
    $segments[] = $seg;
}

$forbidden_top = ['data', 'conf', 'bin', 'inc', 'vendor', 'install.php'];
if ($segments) {
    // Trailing dots/spaces ("conf." / "conf ") name other directories on Linux; strip them for the
    // comparison anyway, in case the tree ever lands on a filesystem that ignores them.
    $first = strtolower(rtrim($segments[0], ". "));
    if (in_array($first, $forbidden_top, true)) {
        return fedsearch_deny(403, 'Forbidden');
    }
}
foreach ($segments as $i => $seg) {
    if ($seg[0] === '.') {
        return fedsearch_deny(403, 'Forbidden');
    }
    // Only DokuWiki's entry points may be executed; plugin/template PHP files are include-only.
    if (preg_match('/\.php$/i', $seg)) {
        $script = implode('/', array_slice($segments, 0, $i + 1));
        if (!preg_match('#^(doku|index|feed)\.php$|^lib/exe/[a-z]+\.php$#', $script)) {
            return fedsearch_deny(403, 'Forbidden');
        }
        break;
    }
}

// Everything that exists: let the built-in server serve the file or run the PHP script
// (doku.php, lib/exe/xmlrpc.php, lib/exe/css.php, ...); a directory gets its index.php/index.html
// ("/" -> index.php -> doku.php); /script.php/extra runs the script with PATH_INFO.
// Anything else is a plain 404 (php -S would otherwise fall back to the root index.php).
$root = rtrim($_SERVER['DOCUMENT_ROOT'], '/');
$fs = $root;
foreach ($segments as $seg) {
    $fs .= '/' . $seg;
    if (is_file($fs)) {
        return false;  // the file itself, or a PHP script with trailing PATH_INFO
    }
    if (!is_dir($fs)) {
        return fedsearch_deny(404, 'Not Found');
    }
}
return false;  // an existing directory
