//! The allocator/NUMA hook (`ofl_allocator`, ABI 1.2) and the global allocator that
//! makes it hold for every allocation a handle makes.
//!
//! Stable Rust has no per-collection allocators, and the engine's tables and GSO output
//! are ordinary `Vec`s. So this crate installs a `#[global_allocator]` (the C library
//! is the final artifact; nothing else in it chooses an allocator) that routes by a
//! thread-local: while a call runs on a handle created with a hook, every allocation on
//! that thread goes to the hook, with the hook's NUMA node. Every block, hooked or not,
//! carries a 16-byte tag in front of it naming its `free` function and `user` pointer
//! (or none: the system allocator), so a block is always returned to the allocator
//! that made it, whatever call (or thread) frees it, and long after the route is gone.
//!
//! The route is suspended while a hook runs (a hook written in Rust does not recurse
//! into itself) and while the GRO delivery callback runs (the caller's own allocations
//! there are not the handle's).
//!
//! A hook that returns NULL cannot be reported through `GlobalAlloc` (a null return
//! makes Rust abort the process, and a global allocator must not unwind). Instead the
//! block comes from the system allocator, the call is marked failed, and the entry
//! point drops what the call built (every such block goes back to the system through
//! its tag) and returns `OFL_ERR_NO_MEMORY`: the caller sees a clean error and the
//! handle keeps no system memory.

use core::cell::Cell;
use core::ffi::c_void;
use std::alloc::{GlobalAlloc, Layout, System};

use crate::ofl_status;

/// Allocates `size` bytes aligned to `align` (a power of two, at most 4096 in
/// practice), preferably on `numa_node`; returns NULL on failure. `user` is the
/// `ofl_allocator`'s.
pub type ofl_alloc_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, size: usize, align: usize, numa_node: i32) -> *mut c_void>;
/// Frees a block from the same allocator's `alloc`, with the `size` and `align` it was
/// allocated with.
pub type ofl_free_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, ptr: *mut c_void, size: usize, align: usize)>;

/// Where a handle's memory comes from (ABI 1.2). Both functions NULL: the system
/// allocator. Every allocation a handle makes (at creation, and when GSO's output grows
/// to a larger super-packet) goes through `alloc`, and is given back through `free`,
/// possibly from `ofl_*_free`. Both are called on the thread that called into the
/// handle (or frees it); `user` must stay valid until every block is freed.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_allocator {
    pub alloc: ofl_alloc_fn,
    pub free: ofl_free_fn,
    pub user: *mut c_void,
    /// Passed to every `alloc` (e.g. the lcore's socket for `rte_malloc_socket`); -1
    /// for "any".
    pub numa_node: i32,
}

/// A checked `ofl_allocator`: both functions present.
#[derive(Clone, Copy)]
pub(crate) struct Hook {
    alloc: unsafe extern "C" fn(*mut c_void, usize, usize, i32) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void, *mut c_void, usize, usize),
    user: *mut c_void,
    numa_node: i32,
}

impl ofl_allocator {
    /// `None` for the system allocator (both functions NULL); only one of them NULL is
    /// an invalid argument.
    pub(crate) fn to_hook(self) -> Result<Option<Hook>, ofl_status> {
        match (self.alloc, self.free) {
            (None, None) => Ok(None),
            (Some(alloc), Some(free)) => Ok(Some(Hook {
                alloc,
                free,
                user: self.user,
                numa_node: self.numa_node,
            })),
            _ => Err(ofl_status::OFL_ERR_INVALID_ARGUMENT),
        }
    }
}

thread_local! {
    /// The hook allocations on this thread go to (none: the system allocator).
    static ROUTE: Cell<Option<Hook>> = const { Cell::new(None) };
    /// A hook refused an allocation since the current route was set.
    static FAILED: Cell<bool> = const { Cell::new(false) };
    /// Allocations made on this thread (through any allocator), for tests.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Allocations made on the calling thread so far (every allocator; `realloc` counts).
/// For tests of "no allocation after warm-up"; not part of the C API.
#[doc(hidden)]
pub fn thread_allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Restores the previous route (and failure flag) when a routed call ends, also by
/// unwinding.
struct Restore {
    route: Option<Hook>,
    failed: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        ROUTE.with(|r| r.set(self.route));
        FAILED.with(|f| f.set(self.failed));
    }
}

fn set_route(route: Option<Hook>) -> Restore {
    Restore {
        route: ROUTE.with(|r| r.replace(route)),
        failed: FAILED.with(|f| f.replace(false)),
    }
}

/// Runs `body` with this thread's allocations going to `hook` (a handle without one
/// runs `body` untouched). `Err(OFL_ERR_NO_MEMORY)` when the hook refused an
/// allocation: `on_failure` then gets `body`'s result to drop what it built.
pub(crate) fn routed<T>(
    hook: Option<Hook>,
    body: impl FnOnce() -> Result<T, ofl_status>,
    on_failure: impl FnOnce(Result<T, ofl_status>),
) -> Result<T, ofl_status> {
    let Some(hook) = hook else {
        return body();
    };
    let restore = set_route(Some(hook));
    let result = body();
    if FAILED.with(Cell::get) {
        on_failure(result);
        drop(restore);
        return Err(ofl_status::OFL_ERR_NO_MEMORY);
    }
    drop(restore);
    result
}

/// Runs `body` (a hook, or the caller's callback) with allocations going to the system
/// allocator.
pub(crate) fn unrouted<T>(body: impl FnOnce() -> T) -> T {
    if ROUTE.with(Cell::get).is_none() {
        return body();
    }
    let _restore = set_route(None);
    body()
}

/// The tag in front of every block: the hook's `free` and `user`, or zeros.
const TAG: usize = 16;

#[repr(C)]
struct Tag {
    free: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, usize, usize)>,
    user: *mut c_void,
}
const _: () = assert!(core::mem::size_of::<Tag>() == TAG);

/// The block behind a `layout`: the tag's room in front (keeping the alignment), and
/// the block's own layout. `None` when the sizes overflow.
fn block_of(layout: Layout) -> Option<(usize, Layout)> {
    let align = layout.align().max(TAG);
    let front = align; // a multiple of TAG and of the alignment
    let size = layout.size().checked_add(front)?;
    Some((front, Layout::from_size_align(size, align).ok()?))
}

/// The global allocator of the C library (see the module documentation).
pub struct Router;

impl Router {
    /// A block from the hook, or NULL (also for a misaligned block, given back).
    ///
    /// # Safety
    /// `block` is a non-zero-size layout.
    unsafe fn from_hook(hook: Hook, block: Layout) -> *mut u8 {
        let ptr = unrouted(|| unsafe { (hook.alloc)(hook.user, block.size(), block.align(), hook.numa_node) });
        if ptr.is_null() {
            return core::ptr::null_mut();
        }
        if !ptr.addr().is_multiple_of(block.align()) {
            // The hook broke its contract; give the block back and treat it as a refusal.
            unrouted(|| unsafe { (hook.free)(hook.user, ptr, block.size(), block.align()) });
            return core::ptr::null_mut();
        }
        ptr.cast()
    }
}

// SAFETY: every block is at least `layout.size()` bytes at `layout.align()` (the block
// is `front` bytes larger and aligned to at least the same power of two, and the
// pointer handed out is `front` bytes in, a multiple of the alignment); `dealloc`
// recomputes the same block from the same layout and frees it where its tag says.
unsafe impl GlobalAlloc for Router {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get().wrapping_add(1)));
        let Some((front, block)) = block_of(layout) else {
            return core::ptr::null_mut();
        };
        let mut tag = Tag { free: None, user: core::ptr::null_mut() };
        let mut base = core::ptr::null_mut();
        if let Some(hook) = ROUTE.with(Cell::get) {
            // SAFETY: `block` is at least TAG bytes.
            base = unsafe { Self::from_hook(hook, block) };
            if base.is_null() {
                FAILED.with(|f| f.set(true));
            } else {
                tag = Tag { free: Some(hook.free), user: hook.user };
            }
        }
        if base.is_null() {
            // SAFETY: a non-zero-size layout.
            base = unsafe { System.alloc(block) };
            if base.is_null() {
                return base;
            }
        }
        // SAFETY: `front >= TAG` bytes of the block precede the returned pointer, and
        // `front - TAG` is a multiple of the tag's alignment (8).
        unsafe {
            let ptr = base.add(front);
            ptr.sub(TAG).cast::<Tag>().write(tag);
            ptr
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // The layout was accepted by `alloc`, so it has a block.
        let Some((front, block)) = block_of(layout) else {
            return;
        };
        // SAFETY: `ptr` came from `alloc` with this layout: the tag is in front of it and
        // the block starts `front` bytes before it.
        unsafe {
            let tag = ptr.sub(TAG).cast::<Tag>().read();
            let base = ptr.sub(front);
            match tag.free {
                Some(free) => unrouted(|| free(tag.user, base.cast(), block.size(), block.align())),
                None => System.dealloc(base, block),
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A system block outside any route grows in place where the system can (the tag
        // stays at the block's start); everything else moves (alloc, copy, dealloc), so
        // a routed call's block comes from its hook.
        // SAFETY: `ptr` came from `alloc` with `layout`; the tag precedes it.
        let system = unsafe { ptr.sub(TAG).cast::<Tag>().read() }.free.is_none();
        if system && ROUTE.with(Cell::get).is_none() {
            let grown = Layout::from_size_align(new_size, layout.align()).ok().and_then(block_of);
            if let (Some((front, block)), Some((new_front, new_block))) = (block_of(layout), grown) {
                debug_assert_eq!(front, new_front);
                ALLOCATIONS.with(|n| n.set(n.get().wrapping_add(1)));
                // SAFETY: the block was allocated by System with `block`; the new size is
                // non-zero and fits isize (checked by `Layout::from_size_align`).
                let base = unsafe { System.realloc(ptr.sub(front), block, new_block.size()) };
                return if base.is_null() { base } else { unsafe { base.add(new_front) } };
            }
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: as `alloc` / `dealloc`; the copy is the smaller of the two sizes.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[global_allocator]
static ROUTER: Router = Router;

/// Reads a caller-sized parameter struct whose first field is `uint32_t size` (the
/// caller's `sizeof`): `min` is the smallest size this ABI accepts (the struct as it
/// was introduced). Fields past the caller's size read as zero; bytes past what this
/// library knows must be zero (a newer caller asking for something this library cannot
/// do is refused, as Linux's `copy_struct_from_user` does).
///
/// # Safety
/// `ptr` is NULL or readable for the `size` bytes its first field states. `T` is a
/// `repr(C)` struct starting with a `u32` size, valid when all-zero.
pub(crate) unsafe fn read_sized<T: Copy>(ptr: *const T, min: usize) -> Result<T, ofl_status> {
    if ptr.is_null() {
        return Err(ofl_status::OFL_ERR_NULL);
    }
    // SAFETY: the first field is a `u32`, readable by contract.
    let size = unsafe { ptr.cast::<u32>().read_unaligned() } as usize;
    let known = core::mem::size_of::<T>();
    if size < min {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    // SAFETY: `size` readable bytes by contract.
    let bytes = unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), size) };
    if bytes.iter().skip(known).any(|&b| b != 0) {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    let mut value = core::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: at most `known` bytes into a `T`; all-zero is valid for `T` by contract,
    // and the caller's bytes form valid field values (pointers, integers, nullable
    // function pointers: any bit pattern of a C caller's struct is).
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), value.as_mut_ptr().cast::<u8>(), size.min(known));
        Ok(value.assume_init())
    }
}
