//! Refusing a read-write redb bank on a network filesystem: redb's multi-process mode relies on
//! file locks and shared memory semantics that NFS, SMB/CIFS and other network filesystems do
//! not give reliably, so a bank there could be damaged by writers on two hosts. The filesystem
//! is classified by its `statfs` magic number ([`network_fs_name`]); a team shares a bank through
//! the PostgreSQL store instead. `TUNEBANK_ALLOW_NETWORK_FS=1` in the environment snapshot
//! ([`Environment::allow_network_fs`](tunebank_key::Environment::allow_network_fs)) overrides
//! the refusal for a bank that only one process on one host writes.

use std::path::Path;

/// The network filesystems by `statfs` magic number (`linux/magic.h`).
pub const NETWORK_FS: [(u32, &str); 10] = [
    (0x6969, "NFS"),
    (0x517B, "SMB"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
    (0x7375_7245, "Coda"),
    (0x5346_414F, "AFS"),
    (0x6B41_4653, "AFS"),
    (0x00C3_6400, "CephFS"),
    (0x0102_1997, "9P"),
    (0x0BD0_0BD0, "Lustre"),
];

/// The name of the network filesystem whose `statfs` `f_type` is `magic`, or `None` for a
/// local one. Only the low 32 bits count (`f_type` is sign-extended on some platforms).
pub fn network_fs_name(magic: i64) -> Option<&'static str> {
    let low = (magic as u64 & 0xFFFF_FFFF) as u32;
    NETWORK_FS.iter().find(|(m, _)| *m == low).map(|(_, n)| *n)
}

/// The `statfs` magic number of the filesystem holding `path` (its nearest existing ancestor:
/// a new bank's file does not exist yet).
pub fn fs_magic(path: &Path) -> std::io::Result<i64> {
    let mut probe = path;
    loop {
        match rustix::fs::statfs(probe) {
            Ok(s) => return Ok(magic_of(&s)),
            Err(e) if e == rustix::io::Errno::NOENT => match probe.parent() {
                Some(p) if !p.as_os_str().is_empty() => probe = p,
                _ => {
                    return rustix::fs::statfs(".")
                        .map(|s| magic_of(&s))
                        .map_err(Into::into)
                }
            },
            Err(e) => return Err(e.into()),
        }
    }
}

/// `f_type` as `i64`: its width and sign differ between platforms.
#[allow(clippy::unnecessary_cast)]
fn magic_of(s: &rustix::fs::StatFs) -> i64 {
    s.f_type as i64
}

/// The name of the network filesystem that refuses a read-write redb bank at `path`, unless
/// `allow`; `magic` gives the filesystem's magic number (injectable for tests). A filesystem
/// that cannot be examined is not refused: opening the bank reports what is wrong with the
/// path.
pub fn refusal(
    path: &Path,
    allow: bool,
    magic: impl Fn(&Path) -> std::io::Result<i64>,
) -> Option<&'static str> {
    if allow {
        return None;
    }
    magic(path).ok().and_then(network_fs_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_classify_network_filesystems() {
        assert_eq!(network_fs_name(0x6969), Some("NFS"));
        assert_eq!(network_fs_name(0xFF53_4D42), Some("CIFS"));
        // Sign-extended as a 32-bit f_type would be on some platforms.
        assert_eq!(network_fs_name(0xFF53_4D42_u32 as i32 as i64), Some("CIFS"));
        assert_eq!(network_fs_name(0xFE53_4D42), Some("SMB2"));
        assert_eq!(network_fs_name(0x517B), Some("SMB"));
        assert_eq!(network_fs_name(0x00C3_6400), Some("CephFS"));
        for local in [0xEF53, 0x5846_5342, 0x0102_1994, 0x9123_683E, 0x794C_7630] {
            // ext4, XFS, tmpfs, btrfs, overlayfs
            assert_eq!(network_fs_name(local), None, "{local:#x}");
        }
    }

    #[test]
    fn a_bank_on_nfs_is_refused_unless_allowed() {
        let path = Path::new("/mnt/team/op.redb");
        assert_eq!(refusal(path, false, |_| Ok(0x6969)), Some("NFS"));
        assert_eq!(refusal(path, true, |_| Ok(0x6969)), None);
        assert_eq!(refusal(path, false, |_| Ok(0xEF53)), None);
        assert_eq!(
            refusal(path, false, |_| Err(std::io::Error::other("no statfs"))),
            None
        );
    }

    #[test]
    fn the_local_temp_dir_is_not_a_network_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let magic = fs_magic(&dir.path().join("new/op.redb")).unwrap();
        assert_eq!(network_fs_name(magic), None, "{magic:#x}");
    }
}
