//! Model of `lib/sort.c`: the kernel's in-place heapsort, in its three generations.
//!
//! The sort is not stable, and which of several equal records comes first decides which NUMA
//! node or cluster `group_cpus_evenly` serves first and which one gets the rounding leftovers.
//! So the exact sequence of compares and swaps matters, not just "a sorted order":
//!
//! * [`SortGen::HeapV5_1`] (v5.1 .. v6.8): one extraction per round; on equal children the
//!   sift-down path goes left.
//! * [`SortGen::HeapV6_9`] (v6.9 .. v6.10): ties go right, and while more than three elements are
//!   left each round extracts two (the root, then the larger child of the root).
//! * [`SortGen::HeapV6_11`] (v6.11 on): as v6.9, but the last two or three elements are finished
//!   after the loop with one swap and at most one compare.
//!
//! The kernel walks byte offsets; this is the equivalent index form. Only the sign of `cmp` is used.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SortGen {
    HeapV5_1,
    HeapV6_9,
    HeapV6_11,
}

impl SortGen {
    pub const ALL: [SortGen; 3] = [SortGen::HeapV5_1, SortGen::HeapV6_9, SortGen::HeapV6_11];

    pub fn name(self) -> &'static str {
        match self {
            SortGen::HeapV5_1 => "heap-v5.1",
            SortGen::HeapV6_9 => "heap-v6.9",
            SortGen::HeapV6_11 => "heap-v6.11",
        }
    }

    pub fn from_name(name: &str) -> Option<SortGen> {
        SortGen::ALL.into_iter().find(|g| g.name() == name)
    }

    /// Kernel versions whose `lib/sort.c` this generation models.
    pub(crate) fn kernels(self) -> &'static str {
        match self {
            SortGen::HeapV5_1 => "v5.1 .. v6.8",
            SortGen::HeapV6_9 => "v6.9 .. v6.10",
            SortGen::HeapV6_11 => "v6.11 ..",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tie {
    Left,
    Right,
}

fn parent(i: usize) -> usize {
    (i - 1) / 2
}

/// Sift the element at `a` down within the first `n` slots, the way `sort_r` does: walk to a
/// leaf along the larger children, back-track to where the element belongs, then rotate.
fn sift_down<T>(x: &mut [T], a: usize, n: usize, tie: Tie, cmp: &impl Fn(&T, &T) -> i32) {
    let mut b = a;
    let (mut c, mut d);
    loop {
        c = 2 * b + 1;
        d = c + 1;
        if d >= n {
            break;
        }
        let go_left = match tie {
            Tie::Right => cmp(&x[c], &x[d]) > 0,
            Tie::Left => cmp(&x[c], &x[d]) >= 0,
        };
        b = if go_left { c } else { d };
    }
    if d == n {
        b = c;
    }
    while b != a && cmp(&x[a], &x[b]) >= 0 {
        b = parent(b);
    }
    let c = b;
    while b != a {
        b = parent(b);
        x.swap(b, c);
    }
}

/// Sort `x` ascending by `cmp` exactly as the given generation of the kernel heapsort does.
pub fn sort<T>(x: &mut [T], gen: SortGen, cmp: impl Fn(&T, &T) -> i32) {
    let n0 = x.len();
    if n0 < 2 {
        return;
    }
    match gen {
        SortGen::HeapV5_1 => {
            let (mut a, mut n) = (n0 / 2, n0);
            loop {
                if a > 0 {
                    a -= 1;
                } else {
                    n -= 1;
                    if n == 0 {
                        return;
                    }
                    x.swap(0, n);
                }
                sift_down(x, a, n, Tie::Left, &cmp);
            }
        }
        SortGen::HeapV6_9 | SortGen::HeapV6_11 => {
            let (mut a, mut n, mut shift) = (n0 / 2, n0, 0u32);
            loop {
                if a > 0 {
                    a -= 1 << shift;
                } else if n > 3 {
                    n -= 1;
                    x.swap(0, n);
                    shift = u32::from(cmp(&x[1], &x[2]) <= 0);
                    a = 1 << shift;
                    n -= 1;
                    x.swap(a, n);
                } else if gen == SortGen::HeapV6_9 && n > 1 {
                    n -= 1;
                    x.swap(0, n);
                } else {
                    break;
                }
                sift_down(x, a, n, Tie::Right, &cmp);
            }
            if gen == SortGen::HeapV6_11 {
                n -= 1;
                x.swap(0, n);
                if n == 2 && cmp(&x[0], &x[1]) > 0 {
                    x.swap(0, 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output order (original indexes) when all keys are equal: the table in the spec, §3.1.
    #[test]
    fn equal_keys_permutation_table() {
        let table: [(usize, [&str; 3]); 6] = [
            (2, ["1 0", "1 0", "1 0"]),
            (3, ["1 2 0", "1 2 0", "2 1 0"]),
            (4, ["1 2 3 0", "1 3 2 0", "1 3 2 0"]),
            (5, ["1 2 3 4 0", "1 3 4 2 0", "3 1 4 2 0"]),
            (6, ["1 2 3 4 5 0", "1 3 4 5 2 0", "1 3 4 5 2 0"]),
            (8, ["1 2 3 4 5 6 7 0", "1 3 4 5 6 7 2 0", "1 3 4 5 6 7 2 0"]),
        ];
        for (n, want) in table {
            for (gen, want) in SortGen::ALL.into_iter().zip(want) {
                let mut v: Vec<usize> = (0..n).collect();
                sort(&mut v, gen, |_, _| 0);
                let got = v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" ");
                assert_eq!(got, want, "n={n} {}", gen.name());
            }
        }
    }

    #[test]
    fn sorts_distinct_keys() {
        for gen in SortGen::ALL {
            for n in 0..40usize {
                let mut v: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 31 - 15).collect();
                let mut want = v.clone();
                want.sort();
                sort(&mut v, gen, |a, b| (a - b).signum() as i32);
                assert_eq!(v, want, "n={n} {}", gen.name());
            }
        }
    }
}
