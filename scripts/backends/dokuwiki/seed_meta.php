<?php
/**
 * Gives the seeded sample pages believable ages (used by scripts/backends/dokuwiki.sh start).
 *
 *   php seed_meta.php SITE_DIR MTIMES_FILE [NOW_EPOCH]
 *
 * MTIMES_FILE lines: `<page id> <days_ago | ISO-8601 time> [<author login>]` ('#' starts a comment);
 * an ISO-8601 time (e.g. 2026-09-01T02:00:00Z, data/nimbus/wiki/mtimes.txt) is used as it is.
 * For every page that exists under SITE_DIR/data/pages it sets the file mtime to NOW - days_ago*86400
 * (or to that time), appends a
 * "created" entry with the same timestamp to the page changelog (data/meta/<ns>/<page>.changes) and
 * to the global one (data/meta/_dokuwiki.changes, in chronological order), and stores the dates in
 * the page metadata. Because changelog date == file mtime, DokuWiki does not treat the files as
 * "external edits", and wiki.getPageInfo().lastModified / dokuwiki.search().mtime show these times.
 * Prints nothing on success except a one-line summary.
 */

if ($argc < 3) {
    fwrite(STDERR, "usage: php seed_meta.php SITE_DIR MTIMES_FILE [NOW_EPOCH]\n");
    exit(2);
}
$site = rtrim(realpath($argv[1]), '/') . '/';
$mtimes = $argv[2];
$now = isset($argv[3]) ? (int)$argv[3] : time();

$_SERVER['HTTP_HOST'] = $_SERVER['HTTP_HOST'] ?? '127.0.0.1';
$_SERVER['SERVER_PORT'] = $_SERVER['SERVER_PORT'] ?? '80';
define('DOKU_INC', $site);
define('NOSESSION', 1);
require_once(DOKU_INC . 'inc/init.php');

use dokuwiki\File\PageFile;

$entries = [];
foreach (file($mtimes, FILE_IGNORE_NEW_LINES) as $n => $line) {
    $line = trim(preg_replace('/#.*/', '', $line));
    if ($line === '') continue;
    $f = preg_split('/\s+/', $line);
    $abs = (count($f) >= 2 && !is_numeric($f[1]) && preg_match('/^\d{4}-\d{2}-\d{2}/', $f[1])) ? strtotime($f[1]) : false;
    if (count($f) < 2 || (!is_numeric($f[1]) && $abs === false)) {
        fwrite(STDERR, "seed_meta: $mtimes:" . ($n + 1) . ": expected '<page id> <days_ago | ISO-8601 time> [author]'\n");
        exit(1);
    }
    $id = cleanID($f[0]);
    $file = wikiFN($id);
    if (!file_exists($file)) {
        fwrite(STDERR, "seed_meta: warning: $id listed in mtimes but has no page file, skipped\n");
        continue;
    }
    $entries[] = [
        'id' => $id,
        'date' => $abs !== false ? $abs : (int)round($now - (float)$f[1] * 86400),
        'user' => $f[2] ?? '',
    ];
}
// oldest first, so the global changelog stays chronological
usort($entries, function ($a, $b) { return $a['date'] <=> $b['date']; });

foreach ($entries as $e) {
    $id = $e['id'];
    $file = wikiFN($id);
    $pageFile = new PageFile($id);
    @unlink(metaFN($id, '.changes'));
    @unlink(metaFN($id, '.meta'));
    touch($file, $e['date']);
    clearstatcache();
    $log = $pageFile->changelog->addLogEntry([
        'date' => $e['date'],
        'ip' => '127.0.0.1',
        'type' => DOKU_CHANGE_TYPE_CREATE,
        'id' => $id,
        'user' => $e['user'],
        'sum' => 'seeded from data/sample/wiki',
        'extra' => '',
        'sizechange' => filesize($file),
    ]);
    $pageFile->updateMetadata($log);
    // filectime cannot be back-dated; state created/modified explicitly
    p_set_metadata($id, [
        'date' => ['created' => $e['date'], 'modified' => $e['date']],
        'user' => $e['user'],
        'creator' => $e['user'],
        'last_change' => $log,
    ], false, true);
}
echo "seed_meta: dated " . count($entries) . " pages\n";
