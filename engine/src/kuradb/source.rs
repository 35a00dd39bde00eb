//! Reading one source file of a knowledge base safely (SPEC.md §15.2):
//! opened without following a symbolic link (`O_NOFOLLOW`; a file swapped
//! for a link between the walk and the read is refused, not read from
//! outside the folder) and without blocking (`O_NONBLOCK`; a FIFO swapped
//! in does not hang the watcher), checked on the open handle (`fstat`: a
//! regular file, at most [`MAX_FILE_BYTES`]) and read with that bound (a
//! file that grows while read, or a device, cannot make it read more).

use std::io::Read;
use std::path::Path;

use super::MAX_FILE_BYTES;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The file itself is refused (a link, not a regular file, too large):
    /// recorded, and not retried until the file changes.
    Refused(String),
    /// The read failed (gone, no permission, an I/O error): retried on the
    /// next pass.
    Failed(String),
}

/// The bytes of regular file `path`, read as the module doc says.
pub(crate) fn read_source(path: &Path) -> Result<Vec<u8>, ReadFailure> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadFailure::Refused(
                "is a symbolic link (links are not followed)".into(),
            ));
        }
        Err(e) => return Err(ReadFailure::Failed(e.to_string())),
    };
    let meta = file
        .metadata()
        .map_err(|e| ReadFailure::Failed(e.to_string()))?;
    if !meta.is_file() {
        return Err(ReadFailure::Refused("is not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadFailure::Refused(format!(
            "is {} bytes, over the {MAX_FILE_BYTES}-byte limit",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadFailure::Failed(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadFailure::Refused(format!(
            "grew past the {MAX_FILE_BYTES}-byte limit while read"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_devices_are_refused_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, b"hello").unwrap();
        assert_eq!(read_source(&file).unwrap(), b"hello");
        #[cfg(unix)]
        {
            let link = dir.path().join("link.txt");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert!(
                matches!(read_source(&link), Err(ReadFailure::Refused(e)) if e.contains("symbolic link"))
            );
            let to_file = dir.path().join("link2.txt");
            std::os::unix::fs::symlink(&file, &to_file).unwrap();
            assert!(matches!(
                read_source(&to_file),
                Err(ReadFailure::Refused(_))
            ));
            assert!(matches!(
                read_source(Path::new("/dev/zero")),
                Err(ReadFailure::Refused(e)) if e.contains("regular")
            ));
        }
        assert!(matches!(
            read_source(&dir.path().join("gone.txt")),
            Err(ReadFailure::Failed(_))
        ));
    }
}
