//! TODO(helper): backoff
