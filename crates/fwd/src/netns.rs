//! Running a piece of setup inside a named network namespace.
//!
//! `setns` changes the namespace of the calling thread only, so each call runs on a
//! short-lived thread: file descriptors and devices it creates stay in that namespace
//! while the forwarder's own thread never moves.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Where a port lives: the forwarder's own namespace or a named/pathed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Netns {
    Current,
    /// `ip netns` name (`/var/run/netns/<name>`) or an absolute path such as
    /// `/proc/<pid>/ns/net`.
    Named(String),
}

impl Netns {
    pub fn parse(text: Option<&str>) -> Netns {
        match text {
            None | Some("") => Netns::Current,
            Some(name) => Netns::Named(name.to_string()),
        }
    }

    /// A name for messages.
    pub fn describe(&self) -> String {
        match self {
            Netns::Current => "the current namespace".to_string(),
            Netns::Named(name) => format!("namespace {name}"),
        }
    }

    fn path(name: &str) -> PathBuf {
        if name.starts_with('/') {
            PathBuf::from(name)
        } else {
            PathBuf::from("/var/run/netns").join(name)
        }
    }

    /// Runs `work` on a thread that has entered this namespace.
    pub fn run<T, F>(&self, work: F) -> io::Result<T>
    where
        T: Send,
        F: FnOnce() -> io::Result<T> + Send,
    {
        let name = match self {
            Netns::Current => return work(),
            Netns::Named(name) => name.clone(),
        };
        let ns_file = File::open(Self::path(&name)).map_err(|err| {
            if err.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no namespace {name}: create it first (ip netns add {name})"),
                )
            } else {
                err
            }
        })?;
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    // SAFETY: setns only reads the fd, which `ns_file` keeps open, and
                    // affects this scoped thread alone.
                    if unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    work()
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("namespace setup thread panicked")))
        })
    }
}
