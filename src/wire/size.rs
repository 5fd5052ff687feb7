//! `const` arithmetic on optional sizes, for `FIXED_SIZE` and `MAX_SIZE`.

/// Sum of two sizes, `None` if either is unknown or the sum overflows.
#[must_use]
pub const fn add(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => a.checked_add(b),
        _ => None,
    }
}

/// `n` times a size, `None` if unknown or overflowing.
#[must_use]
pub const fn mul(a: Option<usize>, n: usize) -> Option<usize> {
    match a {
        Some(a) => a.checked_mul(n),
        None => None,
    }
}

/// The larger of two sizes, `None` if either is unknown.
#[must_use]
pub const fn max(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if a > b { a } else { b }),
        _ => None,
    }
}

/// `Some(n)` if both sizes are the same known `n`, else `None`.
#[must_use]
pub const fn same(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) if a == b => Some(a),
        _ => None,
    }
}

// `i < sizes.len()` bounds the index; `get` is not usable in a `const fn` loop.
#[allow(clippy::indexing_slicing)]
/// The sum of the leading known sizes, up to the first unknown one: the
/// bytes of a run of fixed-size fields that one window can hold.
#[must_use]
pub const fn leading(sizes: &[Option<usize>]) -> usize {
    let mut total = 0usize;
    let mut i = 0;
    while i < sizes.len() {
        match sizes[i] {
            Some(size) => total = total.saturating_add(size),
            None => break,
        }
        i += 1;
    }
    total
}

#[allow(clippy::indexing_slicing)]
/// How many leading sizes are known, up to the first unknown one.
#[must_use]
pub const fn leading_count(sizes: &[Option<usize>]) -> usize {
    let mut i = 0;
    while i < sizes.len() && sizes[i].is_some() {
        i += 1;
    }
    i
}
