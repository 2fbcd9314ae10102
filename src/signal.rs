//! The signals that end a run early: Ctrl-C (SIGINT) and SIGTERM (what `kill`, CI runners and
//! container engines send). Either one must still remove every container the run started.

/// Resolves when SIGINT or SIGTERM arrives after this call. The listeners are registered by
/// the call itself, not at the first poll: a signal that comes between the call and the first
/// wait (`lockbench up` prints the cluster, and a script's `kill` may arrive at once) is still
/// seen. Call it inside the runtime, once per wait that may span several `select!`s.
pub fn shutdown() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let listeners = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        async move {
            match listeners {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
