//! `Sync`'s Barrier and Broadcast (docs/controller.md §3): callers wait on oneshot channels; a
//! caller that goes away while waiting (its RPC dropped) is taken out of the count by a guard.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// A barrier or broadcast's scope: the session (0: global) and its size.
type Scope = (u64, u32);

#[derive(Default)]
struct State {
    /// Per scope: the waiters of the barrier's current generation (id, wake).
    barriers: HashMap<Scope, Vec<(u64, oneshot::Sender<()>)>>,
    /// Per scope: each rank's next operation number, and the operations not yet taken by all.
    broadcasts: HashMap<Scope, Broadcasts>,
    next_id: u64,
}

#[derive(Default)]
struct Broadcasts {
    next_op: HashMap<u32, u64>,
    ops: HashMap<u64, Op>,
}

#[derive(Default)]
struct Op {
    value: Option<u64>,
    waiters: Vec<(u64, oneshot::Sender<u64>)>,
    taken: u32,
}

/// The barriers and broadcasts of one controller.
#[derive(Clone, Default)]
pub struct Sync {
    state: Arc<Mutex<State>>,
}

/// Takes a waiter out of its barrier generation if it is dropped before it is woken.
struct BarrierGuard {
    sync: Sync,
    scope: Scope,
    id: u64,
}

impl Drop for BarrierGuard {
    fn drop(&mut self) {
        let mut st = self.sync.lock();
        if let Some(w) = st.barriers.get_mut(&self.scope) {
            w.retain(|(i, _)| *i != self.id);
        }
    }
}

impl Sync {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns once `num_workers` callers of the same scope's current generation have called.
    pub async fn barrier(&self, session_id: u64, num_workers: u32) {
        let scope = (session_id, num_workers);
        let (rx, guard) = {
            let mut st = self.lock();
            st.next_id += 1;
            let id = st.next_id;
            let (tx, rx) = oneshot::channel();
            let w = st.barriers.entry(scope).or_default();
            w.push((id, tx));
            if w.len() >= num_workers as usize {
                for (_, tx) in w.drain(..) {
                    let _ = tx.send(());
                }
                return;
            }
            (rx, BarrierGuard { sync: self.clone(), scope, id })
        };
        let _ = rx.await;
        drop(guard);
    }

    /// Rank `rank`'s next broadcast of the scope: the root's `value` of the same operation.
    pub async fn broadcast(&self, session_id: u64, num_workers: u32, rank: u32, root: u32, value: u64) -> u64 {
        let scope = (session_id, num_workers);
        let rx = {
            let mut st = self.lock();
            st.next_id += 1;
            let id = st.next_id;
            let b = st.broadcasts.entry(scope).or_default();
            let op_no = {
                let n = b.next_op.entry(rank).or_insert(0);
                *n += 1;
                *n - 1
            };
            let op = b.ops.entry(op_no).or_default();
            if rank == root && op.value.is_none() {
                op.value = Some(value);
                for (_, tx) in op.waiters.drain(..) {
                    if tx.send(value).is_ok() {
                        op.taken += 1;
                    }
                }
            }
            match op.value {
                Some(v) => {
                    op.taken += 1;
                    if op.taken >= num_workers {
                        b.ops.remove(&op_no);
                    }
                    return v;
                }
                None => {
                    let (tx, rx) = oneshot::channel();
                    op.waiters.push((id, tx));
                    rx
                }
            }
        };
        // The root's call arrives later; if this caller goes away first, its sender is dropped
        // with the operation's send failing, and it is not counted as taken.
        rx.await.unwrap_or(0)
    }
}
