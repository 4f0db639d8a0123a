//! Crash injection: a test's gpuform is killed (SIGKILL) after a stand-in
//! has carried out a request and before its answer leaves, the worst moment
//! for a client that must neither lose nor duplicate what it made.

use crate::MockCloud;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// For a [`crate::RequestHook`]: kills `pid`, a child of this test process,
/// with SIGKILL and returns once it is dead, so the answer the hook holds
/// back can never reach it. It stays a zombie for the `wait` of whoever
/// spawned it (waitid's WNOWAIT). Waiting, not sleeping: no guess at how
/// long a kill takes to land, and no time lost when it lands at once.
pub fn kill_before_answer(pid: u32) {
    // SAFETY: kill(2) and waitid(2) on our own child, which is not reaped
    // before its spawner's wait; siginfo_t is plain data, zeroed is valid.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
        let mut info: libc::siginfo_t = std::mem::zeroed();
        // ECHILD (not our child, or already reaped) returns at once.
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        );
    }
}

/// The request hook of one stand-in, armed run by run: [`Killer::run`]
/// starts a gpuform and kills it right after the stand-in has served the
/// chosen request of that run.
pub struct Killer {
    /// The running gpuform (0: none).
    pid: Arc<AtomicU32>,
    /// The request, counted over the stand-in's life, to kill at.
    target: Arc<AtomicU64>,
}

impl Killer {
    /// Installs the hook on `mock`, replacing any other.
    pub fn install(mock: &dyn MockCloud) -> Killer {
        let pid = Arc::new(AtomicU32::new(0));
        let target = Arc::new(AtomicU64::new(u64::MAX));
        let (p, t) = (pid.clone(), target.clone());
        mock.set_hook(Some(Arc::new(move |n: u64| {
            if n == t.load(Ordering::SeqCst) {
                let victim = p.load(Ordering::SeqCst);
                if victim != 0 {
                    kill_before_answer(victim);
                }
            }
        })));
        Killer { pid, target }
    }

    /// Spawns `cmd` (its stdio as the caller set it) and waits for it;
    /// kills it right after `mock`, the stand-in the hook is on, has served
    /// the `call`-th request of this run (`None`: never).
    pub fn run(&self, mock: &dyn MockCloud, cmd: &mut Command, call: Option<u64>) -> Output {
        let target = call.map_or(u64::MAX, |n| mock.requests() + n);
        self.target.store(target, Ordering::SeqCst);
        let child = cmd.spawn().expect("spawn gpuform");
        self.pid.store(child.id(), Ordering::SeqCst);
        let out = child.wait_with_output().expect("wait for gpuform");
        self.pid.store(0, Ordering::SeqCst);
        self.target.store(u64::MAX, Ordering::SeqCst);
        out
    }
}
