//! Running independent work side by side, with the results in a fixed
//! order, so a command's output never depends on which thread finished
//! first. A panic on a worker is raised again on the caller.

/// Below this many points, a second thread costs more than it saves.
pub const FEW_POINTS: usize = 20_000;

/// Threads worth starting for `points` points of work: one below
/// [`FEW_POINTS`], else one per core.
pub fn threads_for(points: usize) -> usize {
    if points < FEW_POINTS {
        1
    } else {
        cores()
    }
}

/// The cores this process may use. Asked only where work is large enough
/// to split: on Linux the answer reads the cgroup files, a tenth of a
/// millisecond that a command on the shipped data does not need to spend.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `items` cut into at most `parts` runs in order, each of about the same
/// total `weight` (a run is never empty; a heavy item is a run of its own
/// when it must be).
pub fn balanced<T>(items: &[T], weight: impl Fn(&T) -> usize, parts: usize) -> Vec<&[T]> {
    let total: usize = items.iter().map(&weight).sum();
    let parts = parts.max(1);
    let mut runs = Vec::with_capacity(parts);
    let (mut start, mut done) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        done += weight(item);
        // Cut where the running total passes the next share.
        if runs.len() + 1 < parts && done * parts >= total * (runs.len() + 1) {
            runs.push(&items[start..=i]);
            start = i + 1;
        }
    }
    if start < items.len() {
        runs.push(&items[start..]);
    }
    runs
}

/// Below this many items (points, findings), a value is freed where it
/// is dropped: a thread costs more than freeing it.
pub const FEW_TO_FREE: usize = 2_000;

/// Frees `value` on a thread of its own when it holds at least
/// [`FEW_TO_FREE`] `items`, else here: a command's last large values (the
/// points, their ids in a report, the findings) are freed while the answer
/// is written, not before. The process may end before that thread does:
/// the system takes the memory back either way.
pub fn drop_later<T: Send + 'static>(value: T, items: usize) {
    if items >= FEW_TO_FREE {
        // A thread that cannot start drops the value on this one.
        let _ = std::thread::Builder::new().spawn(move || drop(value));
    }
}

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

    /// Reports the thread it is dropped on.
    struct Tell(std::sync::mpsc::Sender<std::thread::ThreadId>);

    impl Drop for Tell {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    #[test]
    fn a_large_value_is_freed_on_another_thread_and_a_small_one_here() {
        let (tx, rx) = std::sync::mpsc::channel();
        let here = std::thread::current().id();
        super::drop_later(Tell(tx.clone()), super::FEW_TO_FREE - 1);
        assert_eq!(rx.recv().unwrap(), here);
        super::drop_later(Tell(tx), super::FEW_TO_FREE);
        let there = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_ne!(there, here);
    }

    #[test]
    fn balanced_runs_keep_every_item_in_order_and_share_the_weight() {
        let items: Vec<usize> = vec![5, 1, 1, 1, 1, 1, 9, 1, 1, 1, 1, 2];
        for parts in 1..=14 {
            let runs = super::balanced(&items, |w| *w, parts);
            assert!(runs.len() <= parts && runs.iter().all(|r| !r.is_empty()), "{parts}: {runs:?}");
            assert_eq!(runs.concat(), items, "{parts}");
        }
        // Two parts: cut where the first half of the weight (12 of 25) is passed.
        assert_eq!(super::balanced(&items, |w| *w, 2), vec![&items[..7], &items[7..]]);
        // Equal weights split evenly.
        let even = vec![1usize; 10];
        assert_eq!(super::balanced(&even, |w| *w, 2).iter().map(|r| r.len()).collect::<Vec<_>>(), vec![5, 5]);
        assert!(super::balanced(&Vec::<usize>::new(), |w| *w, 3).is_empty());
    }
}
