//! [`Error`]: one error type for everything this crate's calls can fail with, so `?` works
//! across starting a node, serving, calling, broadcasting and spawning a registry. Each
//! variant holds the specific error of the call that failed (still matchable); its one-line
//! `Display` names the step and the cause, and [`source`](std::error::Error::source) goes on
//! below what that line already said.

use std::fmt;

use crate::{
    BroadcastFailure, CallFailure, NotRegistered, RespondFailure, SendFailure, StartError, Stopped,
};

/// The enum and a `From` for each wrapped error, so `?` converts.
macro_rules! error_enum {
    ($($(#[$attr:meta])* $variant:ident($inner:ty),)*) => {
        /// Any failure of this crate's calls; see the module docs.
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum Error {
            $($(#[$attr])* $variant($inner),)*
        }

        $(
            $(#[$attr])*
            impl From<$inner> for Error {
                fn from(e: $inner) -> Error {
                    Error::$variant(e)
                }
            }
        )*
    };
}

error_enum! {
    /// A node did not start ([`NodeBuilder::start`](crate::NodeBuilder::start)).
    Start(StartError),
    /// A node did not register ([`NodeHandle::wait_registered`](crate::NodeHandle::wait_registered)).
    NotRegistered(NotRegistered),
    /// A send was not accepted ([`NodeHandle::send`](crate::NodeHandle::send) and its kin).
    Send(SendFailure),
    /// A call has no outcome ([`NodeHandle::call`](crate::NodeHandle::call)).
    Call(CallFailure),
    /// A broadcast has no report ([`NodeHandle::broadcast`](crate::NodeHandle::broadcast)).
    Broadcast(BroadcastFailure),
    /// Serving or answering failed ([`NodeHandle::serve`](crate::NodeHandle::serve),
    /// [`Request::respond`](crate::Request::respond)).
    Serve(RespondFailure),
    /// The node's driver has stopped (status, metrics, shutdown, ...).
    Stopped(Stopped),
    /// Socket I/O failed (binding an embedded registry: [`crate::registry::spawn_registry`]).
    Io(std::io::Error),
    /// A TLS setup could not be built ([`crate::transport::tls::TlsConfig`]).
    #[cfg(feature = "tls")]
    Tls(crate::transport::tls::TlsError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Start(e) => write!(f, "node start failed: {e}"),
            Error::NotRegistered(e) => write!(f, "node not registered: {e}"),
            Error::Send(e) => write!(f, "send failed: {e}"),
            Error::Call(e) => write!(f, "call failed: {e}"),
            Error::Broadcast(e) => write!(f, "broadcast failed: {e}"),
            Error::Serve(e) => write!(f, "serving failed: {e}"),
            Error::Stopped(e) => e.fmt(f),
            Error::Io(e) => write!(f, "I/O failed: {e}"),
            #[cfg(feature = "tls")]
            Error::Tls(e) => write!(f, "TLS setup failed: {e}"),
        }
    }
}

impl std::error::Error for Error {
    /// What lies below the line `Display` wrote (which already includes the wrapped error's
    /// own message).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Start(e) => e.source(),
            Error::NotRegistered(e) => e.source(),
            Error::Send(e) => e.source(),
            Error::Call(e) => e.source(),
            Error::Broadcast(e) => e.source(),
            Error::Serve(e) => e.source(),
            Error::Stopped(e) => e.source(),
            Error::Io(e) => e.source(),
            #[cfg(feature = "tls")]
            Error::Tls(e) => e.source(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use switchboard_core::{CallError, ReplyError};

    use super::*;

    /// One line naming the step and the cause; the source continues below it (a bind's
    /// I/O error), never repeating the line.
    #[test]
    fn each_error_is_one_line_naming_its_step_and_cause() {
        let call = Error::from(CallFailure::Refused(CallError::InvalidMethod));
        assert_eq!(
            call.to_string(),
            format!("call failed: {}", CallError::InvalidMethod)
        );
        assert!(call.source().is_none());
        let serve = Error::from(RespondFailure::Refused(ReplyError::InvalidMethod));
        assert!(serve.to_string().starts_with("serving failed: "));
        assert_eq!(Error::from(Stopped).to_string(), "the node is stopped");
        let bind = Error::from(StartError::Bind {
            addr: ([127, 0, 0, 1], 1).into(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        });
        let line = bind.to_string();
        assert!(line.starts_with("node start failed: cannot listen on 127.0.0.1:1: "));
        assert!(!line.contains('\n'));
        let below = bind.source().expect("the I/O error");
        assert_eq!(
            below.to_string(),
            std::io::Error::from(std::io::ErrorKind::AddrInUse).to_string()
        );
        let timeout = Error::from(NotRegistered::Timeout {
            after: std::time::Duration::from_secs(2),
        });
        assert_eq!(
            timeout.to_string(),
            "node not registered: the registry did not register the node within 2s"
        );
    }
}
