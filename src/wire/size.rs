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
