//! A task on its own thread and tokio runtime, stopped and joined when
//! dropped: how every stand-in server and the tap run beside a test.

use std::future::Future;
use std::net::SocketAddr;
use tokio::sync::oneshot;

pub(crate) struct Background {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Runs `task` on a thread named `name`; the receiver it gets fires when
    /// the returned value is dropped, and the task should then end.
    pub(crate) fn spawn<F, Fut>(name: &str, task: F) -> Background
    where
        F: FnOnce(oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                rt.block_on(task(stopped));
            })
            .unwrap_or_else(|e| panic!("spawn the {name} thread: {e}"));
        Background {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Serves `app` on a free 127.0.0.1 port until dropped.
    pub(crate) fn serve(name: &str, app: axum::Router) -> (SocketAddr, Background) {
        let (listener, addr) = listen();
        let server = Background::spawn(name, move |stopped| async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        (addr, server)
    }
}

/// A non-blocking listener on a free 127.0.0.1 port, and its address.
pub(crate) fn listen() -> (std::net::TcpListener, SocketAddr) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let addr = listener.local_addr().expect("local address");
    (listener, addr)
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
