//! `memcmp` for SQLite's C code, eight bytes at a time.
//!
//! In wasm32-unknown-unknown there is no libc: SQLite's calls to `memcmp` (every text and
//! blob key it compares in a B-tree seek, every record comparison) go to the Rust
//! toolchain's `compiler_builtins`, whose `memcmp` compares one byte per loop iteration.
//! Its symbol is weak, so this strong definition replaces it for the whole module (the
//! Rust code's slice comparisons too). It returns what C's `memcmp` returns: the sign of the
//! difference of the first differing bytes, as unsigned.
//!
//! (`memcpy` and `memset` need no such help: the build compiles SQLite with
//! `-mbulk-memory`, so clang emits the `memory.copy` and `memory.fill` instructions.)

/// Compares `n` bytes at `a` and `b` as C's `memcmp` does: 0 if equal, else a number with
/// the sign of the difference of the first differing bytes (as unsigned).
///
/// # Safety
///
/// As C's `memcmp`: `a` and `b` are valid for reads of `n` bytes. The caller is SQLite (or
/// Rust's own slice comparison), which passes the bounds of buffers it owns.
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, so both 8-byte reads are inside the caller's buffers;
        // read_unaligned has no alignment requirement.
        let (x, y) = unsafe {
            (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            // Big-endian order compares the first differing byte first, as memcmp does.
            return if u64::from_be(x) < u64::from_be(y) { -1 } else { 1 };
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n, inside both buffers.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}
