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
/// For the field at `k` of a window's run (`sizes` and `words`, its fields'
/// `FIXED_SIZE` and `WORD` from the window's first field on; the window
/// holds the leading known sizes): how many fields from `k` on one store of
/// their words writes, 1 for a field that writes itself and 0 for one
/// written by a store that starts before it. A store takes word fields
/// side by side while their sizes add up to 8 bytes or fewer, and starts
/// only where the window has 8 bytes left from it (its bytes past the
/// fields are written over by the window's next fields).
#[must_use]
pub const fn word_group(sizes: &[Option<usize>], words: &[bool], k: usize) -> usize {
    let count = leading_count(sizes);
    let window = leading(sizes);
    let mut i = 0;
    let mut at = 0usize;
    while i < count && i < words.len() {
        let size = match sizes[i] {
            Some(size) => size,
            None => 0,
        };
        let mut n = 1;
        let mut total = size;
        if words[i] && size <= 8 && at.saturating_add(8) <= window {
            while i + n < count && i + n < words.len() && words[i + n] {
                let next = match sizes[i + n] {
                    Some(size) => size,
                    None => 0,
                };
                if total + next > 8 {
                    break;
                }
                total += next;
                n += 1;
            }
        }
        if k == i {
            return n;
        }
        if k < i + n {
            return 0;
        }
        at = at.saturating_add(total);
        i += n;
    }
    1
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
