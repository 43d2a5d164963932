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
 * A page listed on SEVERAL lines gets that many revisions: the oldest is its "created" entry, each
 * later one an "edit", the newest is the current page; the older revisions are written to the attic
 * (data/attic/<ns>/<page>.<date>.txt.gz) with the page's text (the file holds only one text), so
 * wiki.getPageVersions lists every one of them with its date and author.
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

// per page: how many revisions (the global changelog is written in date order, across pages)
$count = [];
foreach ($entries as $e) {
    $count[$e['id']] = ($count[$e['id']] ?? 0) + 1;
}
$seen = [];
$text = [];
foreach ($entries as $e) {
    $id = $e['id'];
    $file = wikiFN($id);
    $i = $seen[$id] = isset($seen[$id]) ? $seen[$id] + 1 : 0;
    $last = $i === $count[$id] - 1;
    if ($i === 0) {
        @unlink(metaFN($id, '.changes'));
        @unlink(metaFN($id, '.meta'));
        foreach (glob(dirname(wikiFN($id, 1)) . '/' . noNS($id) . '.*.txt*') ?: [] as $old) {
            @unlink($old);
        }
        $text[$id] = io_readFile($file);
        $created[$id] = $e;
    }
    if (!$last) {
        io_saveFile(wikiFN($id, $e['date']), $text[$id]);
    }
    touch($last ? $file : wikiFN($id, $e['date']), $e['date']);
    clearstatcache();
    $pageFile = new PageFile($id);
    $log = $pageFile->changelog->addLogEntry([
        'date' => $e['date'],
        'ip' => '127.0.0.1',
        'type' => $i === 0 ? DOKU_CHANGE_TYPE_CREATE : DOKU_CHANGE_TYPE_EDIT,
        'id' => $id,
        'user' => $e['user'],
        'sum' => $i === 0 ? 'seeded from data/sample/wiki' : 'imported revision',
        'extra' => '',
        'sizechange' => $i === 0 ? filesize($file) : 0,
    ]);
    if ($last) {
        $pageFile->updateMetadata($log);
        // filectime cannot be back-dated; state created/modified explicitly
        p_set_metadata($id, [
            'date' => ['created' => $created[$id]['date'], 'modified' => $e['date']],
            'user' => $e['user'],
            'creator' => $created[$id]['user'],
            'last_change' => $log,
        ], false, true);
    }
}
echo "seed_meta: dated " . count($count) . " pages (" . count($entries) . " revisions)\n";
