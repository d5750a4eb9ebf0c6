//! The executable's pages the start touched, given back once the node is up.
//!
//! Starting a node runs a little code from nearly every part of the program (both database
//! drivers, every route's construction, the templates, TLS), and the kernel maps each touched
//! page's neighbours with it (fault-around), so after the start most of the executable's code
//! and read-only data is resident though an idle node uses a small part of it. Once the start
//! has settled, [`release_executable_pages`] advises the kernel (`MADV_PAGEOUT`) to reclaim
//! the read-only mappings of the executable: clean pages of a file, dropped without writing
//! anything. What the node then runs faults back in as it runs (the first request of a kind
//! pays a few milliseconds for it); what it does not run stays out. Writable mappings (data
//! the program changed, which would have to go to swap) are left alone.

use std::path::Path;
use std::time::Duration;

/// How long after the node is up its pages are given back: the start's work (migrations,
/// the workers' first passes) is done by then.
pub const SETTLE: Duration = Duration::from_secs(2);

/// A mapping of `/proc/self/maps`: its start, length, permissions and path.
struct Mapping<'a> {
    start: usize,
    len: usize,
    perms: &'a str,
    path: &'a str,
}

/// One line of `/proc/self/maps`: `start-end perms offset device inode   path`.
fn mapping(line: &str) -> Option<Mapping<'_>> {
    let mut rest = line;
    let mut fields = [""; 5];
    for field in &mut fields {
        rest = rest.trim_start();
        let end = rest.find(' ').unwrap_or(rest.len());
        (*field, rest) = rest.split_at(end);
    }
    let (start, end) = fields[0].split_once('-')?;
    let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
    Some(Mapping { start, len: end.checked_sub(start)?, perms: fields[1], path: rest.trim() })
}

/// The read-only mappings of `exe` in `maps` (the text of `/proc/self/maps`): their start
/// addresses and lengths.
fn read_only_mappings(maps: &str, exe: &Path) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(mapping)
        .filter(|m| Path::new(m.path) == exe && m.perms.starts_with('r') && m.perms.as_bytes().get(1) == Some(&b'-'))
        .map(|m| (m.start, m.len))
        .collect()
}

/// Advises the kernel to reclaim the pages of the executable's read-only mappings; answers
/// the bytes advised (mapped, not all of them resident). Linux only; elsewhere nothing.
pub fn release_executable_pages() -> std::io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        let exe = std::fs::read_link("/proc/self/exe")?;
        let maps = std::fs::read_to_string("/proc/self/maps")?;
        let mut advised = 0;
        for (start, len) in read_only_mappings(&maps, &exe) {
            // SAFETY: the range is one of this process's own mappings, as the kernel listed
            // it; MADV_PAGEOUT only drops clean file pages of it, which fault back in
            // unchanged when next read, so no memory the program sees changes.
            let done = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_PAGEOUT) };
            if done != 0 {
                return Err(std::io::Error::last_os_error());
            }
            advised += len;
        }
        Ok(advised)
    }
    #[cfg(not(target_os = "linux"))]
    Ok(0)
}

/// Gives back the executable's pages [`SETTLE`] after now, in a task of its own that ends
/// with the process (the server's process only: a test process holding many servers keeps
/// its pages).
pub fn spawn_release() {
    tokio::spawn(async {
        tokio::time::sleep(SETTLE).await;
        match tokio::task::spawn_blocking(release_executable_pages).await {
            Ok(Ok(bytes)) => {
                tracing::debug!(mapped_bytes = bytes, "gave back the executable's pages the start touched")
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot give back the executable's pages"),
            Err(e) => tracing::warn!(error = %e, "cannot give back the executable's pages"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
5581d0a00000-5581d1449000 r--p 00000000 103:02 1837 /srv/rehome/bin/rehome
5581d1449000-5581d2ce1000 r-xp 00a48000 103:02 1837 /srv/rehome/bin/rehome
5581d2ce1000-5581d2f08000 r--p 022e0000 103:02 1837 /srv/rehome/bin/rehome
5581d2f08000-5581d2f14000 rw-p 02506000 103:02 1837 /srv/rehome/bin/rehome
5581d2f14000-5581d2f15000 rw-p 00000000 00:00 0
5581d3000000-5581d3100000 rw-p 00000000 00:00 0                          [heap]
7f3c1a000000-7f3c1a200000 r-xp 00000000 103:02 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f3c1b000000-7f3c1b001000 r--p 00000000 103:02 1900 /srv/rehome/bin/rehome copy
";

    #[test]
    fn only_the_executables_read_only_mappings_are_given_back() {
        let found = read_only_mappings(MAPS, Path::new("/srv/rehome/bin/rehome"));
        assert_eq!(
            found,
            [
                (0x5581d0a00000, 0x5581d1449000 - 0x5581d0a00000),
                (0x5581d1449000, 0x5581d2ce1000 - 0x5581d1449000),
                (0x5581d2ce1000, 0x5581d2f08000 - 0x5581d2ce1000),
            ]
        );
        assert_eq!(read_only_mappings(MAPS, Path::new("/srv/rehome/bin/rehome copy")), [(0x7f3c1b000000, 0x1000)]);
        assert!(read_only_mappings("garbage\n\n12-1 r--p", Path::new("/srv/rehome/bin/rehome")).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_gives_its_pages_back_and_runs_on() {
        let file_backed = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|line| line.starts_with("RssFile:")).unwrap().to_owned();
            line.split_ascii_whitespace().nth(1).unwrap().parse::<u64>().unwrap()
        };
        let before = file_backed();
        let advised = release_executable_pages().expect("madvise on our own mappings");
        assert!(advised > 0);
        // The code this test runs faults back in; most of the rest stays out.
        let after = file_backed();
        assert!(after < before, "RssFile {before} kB before, {after} kB after");
    }
}
