//! `switchboard node --serve echo,sleep,silent`: the built-in method handlers, for tests and
//! demonstrations. Each is served under its own name: `echo` answers the payload at once,
//! `sleep` waits the milliseconds its payload writes in ASCII decimal then answers the
//! payload (a payload that is not a number is answered at once; a wait that outlasts the
//! caller's deadline is never answered), `silent` holds every request and never answers
//! (its callers end at their deadline, or on the node's death).

use std::{str::FromStr, time::Duration};

use switchboard_tokio::{NodeHandle, Request, Requests, RespondFailure};
use tokio::{task::JoinSet, time::Instant};

/// Longest wait `sleep` takes: a payload above it waits this long.
pub(crate) const SLEEP_MAX: Duration = Duration::from_secs(3600);

/// One built-in handler; its method name is [`BuiltinHandler::method`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum BuiltinHandler {
    /// Answers the payload.
    Echo,
    /// Waits the payload's milliseconds, then answers the payload.
    Sleep,
    /// Never answers.
    Silent,
}

impl BuiltinHandler {
    /// Every handler, in the order of their names.
    pub(crate) const ALL: [BuiltinHandler; 3] = [
        BuiltinHandler::Echo,
        BuiltinHandler::Sleep,
        BuiltinHandler::Silent,
    ];

    /// The method it serves: `echo`, `sleep` or `silent`.
    pub(crate) const fn method(self) -> &'static str {
        match self {
            BuiltinHandler::Echo => "echo",
            BuiltinHandler::Sleep => "sleep",
            BuiltinHandler::Silent => "silent",
        }
    }
}

impl FromStr for BuiltinHandler {
    type Err = String;

    fn from_str(text: &str) -> Result<BuiltinHandler, String> {
        BuiltinHandler::ALL
            .into_iter()
            .find(|h| h.method() == text)
            .ok_or_else(|| format!("expected echo, sleep or silent, got {text:?}"))
    }
}

/// How long `sleep` waits for `payload`: its ASCII decimal milliseconds (surrounding
/// whitespace allowed), at most [`SLEEP_MAX`]; `None` when the payload is not a number.
pub(crate) fn sleep_duration(payload: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(payload).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Only digits: a parse error is an overflow, i.e. longer than the cap anyway.
    let ms = text.parse::<u64>().unwrap_or(u64::MAX);
    Some(Duration::from_millis(ms).min(SLEEP_MAX))
}

/// Serves `handler`'s method on `handle` and answers its requests until the node stops.
///
/// # Errors
///
/// The core refused to serve the method, or the node stopped.
pub(crate) async fn start(
    handle: &NodeHandle,
    handler: BuiltinHandler,
) -> Result<tokio::task::JoinHandle<()>, RespondFailure> {
    let requests = handle.serve(handler.method()).await?;
    Ok(tokio::spawn(answer(handler, requests)))
}

/// Answers every request of one method as `handler` does, until the stream ends.
async fn answer(handler: BuiltinHandler, mut requests: Requests) {
    // `sleep` requests wait concurrently; `silent` ones are held here (with the instant
    // their caller stops waiting) and let go once that passed.
    let mut sleeping = JoinSet::new();
    let mut held: Vec<(Instant, Request)> = Vec::new();
    while let Some(request) = requests.recv().await {
        match handler {
            BuiltinHandler::Echo => {
                let payload = request.payload().clone();
                respond(request, payload).await;
            }
            BuiltinHandler::Sleep => {
                let wait = sleep_duration(request.payload());
                if wait.is_none() {
                    tracing::warn!(
                        from = request.from().0,
                        "sleep: the payload is not ASCII decimal milliseconds; answering at once"
                    );
                }
                let wait = wait.unwrap_or(Duration::ZERO);
                sleeping.spawn(async move {
                    // An answer after the caller's deadline would be dropped: past it, the
                    // request is let go unanswered instead of held for the whole sleep.
                    if wait >= request.remaining() {
                        tokio::time::sleep(request.remaining()).await;
                        return;
                    }
                    tokio::time::sleep(wait).await;
                    let payload = request.payload().clone();
                    respond(request, payload).await;
                });
                while sleeping.try_join_next().is_some() {}
            }
            BuiltinHandler::Silent => {
                let now = Instant::now();
                held.retain(|(until, _)| *until > now);
                held.push((now + request.remaining(), request));
            }
        }
    }
}

/// Answers `request`; a refusal (the caller gave up, the deadline passed) is only logged.
async fn respond(request: Request, payload: bytes::Bytes) {
    let method = request.method().to_owned();
    if let Err(e) = request.respond(payload).await {
        tracing::debug!(%method, error = %e, "answer not taken");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_names_are_exactly_echo_sleep_and_silent() {
        assert_eq!("echo".parse(), Ok(BuiltinHandler::Echo));
        assert_eq!("sleep".parse(), Ok(BuiltinHandler::Sleep));
        assert_eq!("silent".parse(), Ok(BuiltinHandler::Silent));
        assert_eq!(
            "Echo".parse::<BuiltinHandler>(),
            Err("expected echo, sleep or silent, got \"Echo\"".to_owned())
        );
        assert!("".parse::<BuiltinHandler>().is_err());
    }

    #[test]
    fn sleep_reads_ascii_decimal_milliseconds() {
        assert_eq!(sleep_duration(b"250"), Some(Duration::from_millis(250)));
        assert_eq!(sleep_duration(b" 0\n"), Some(Duration::ZERO));
        assert_eq!(sleep_duration(b"99999999999999999999999"), Some(SLEEP_MAX));
        assert_eq!(sleep_duration(b""), None);
        assert_eq!(sleep_duration(b"1.5"), None);
        assert_eq!(sleep_duration(b"-3"), None);
        assert_eq!(sleep_duration(b"ten"), None);
        assert_eq!(sleep_duration(&[0xff, 0x31]), None);
    }
}
