//! Running independent work side by side, with the results in a fixed
//! order, so a command's output never depends on which thread finished
//! first. A panic on a worker is raised again on the caller.

/// Below this many points, a second thread costs more than it saves.
pub const FEW_POINTS: usize = 20_000;

/// `a` and `b`, side by side when `parallel`, else one after the other.
pub fn join<A: Send, B>(parallel: bool, a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if !parallel {
        let a = a();
        return (a, b());
    }
    std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), b)
    })
}

/// `f` of each part, each part on its own thread (one part: on this
/// one), the results in the parts' order.
pub fn map<P: Send, R: Send>(parts: Vec<P>, f: impl Fn(P) -> R + Sync) -> Vec<R> {
    if parts.len() <= 1 {
        return parts.into_iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = parts.into_iter().map(|p| s.spawn(move || f(p))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_their_order_on_one_thread_or_many() {
        for parallel in [false, true] {
            assert_eq!(super::join(parallel, || 1, || "b"), (1, "b"));
        }
        let parts: Vec<u64> = (0..8).collect();
        assert_eq!(super::map(parts, |p| p * 10), (0..8).map(|p| p * 10).collect::<Vec<_>>());
        assert_eq!(super::map(vec![7u64], |p| p + 1), vec![8]);
    }
}
