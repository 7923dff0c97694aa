//! Guest memory: one memfd mapped shared, handed to the backend in SET_MEM_TABLE. Guest
//! physical addresses are offsets into it; no hugepages are needed on this side.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// A shared mapping of a memfd with a bump allocator for rings and buffers.
pub struct GuestMemory {
    file: File,
    base: *mut u8,
    size: usize,
    next: usize,
}

impl GuestMemory {
    pub fn new(size: usize) -> io::Result<GuestMemory> {
        // SAFETY: memfd_create with a valid NUL-terminated name; the fd is owned below.
        let fd = unsafe { libc::memfd_create(c"ofl-vhostload".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(size as u64)?;
        // SAFETY: a shared read-write mapping of the whole file, unmapped in Drop.
        let base = unsafe {
            libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE,
                       libc::MAP_SHARED | libc::MAP_POPULATE, file.as_raw_fd(), 0)
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(GuestMemory { file, base: base as *mut u8, size, next: 0 })
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// This process's address of guest address 0 (the "userspace address" of the region).
    pub fn host_base(&self) -> u64 {
        self.base as u64
    }

    /// Reserves `len` bytes aligned to `align`; returns their guest address.
    pub fn alloc(&mut self, len: usize, align: usize) -> io::Result<u64> {
        let start = self.next.next_multiple_of(align);
        if start + len > self.size {
            return Err(io::Error::other(format!(
                "guest memory of {} MiB too small (needs more than {} MiB)",
                self.size >> 20, (start + len) >> 20)));
        }
        self.next = start + len;
        Ok(start as u64)
    }

    /// The bytes at guest address `addr`; None outside the memory.
    pub fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let end = (addr as usize).checked_add(len)?;
        // SAFETY: inside the mapping (checked); the backend writes only buffers this
        // side has handed over and not yet taken back.
        (end <= self.size).then(|| unsafe { std::slice::from_raw_parts(self.base.add(addr as usize), len) })
    }

    pub fn write(&mut self, addr: u64, bytes: &[u8]) {
        let end = addr as usize + bytes.len();
        assert!(end <= self.size, "write past guest memory");
        // SAFETY: inside the mapping (asserted).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(addr as usize), bytes.len()) }
    }

    /// A pointer for the ring code's volatile accesses.
    pub(crate) fn ptr(&self, addr: u64) -> *mut u8 {
        assert!((addr as usize) < self.size);
        // SAFETY: inside the mapping (asserted).
        unsafe { self.base.add(addr as usize) }
    }
}

impl Drop for GuestMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no reference into it outlives self.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
    }
}
