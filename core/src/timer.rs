//! TODO(helper): timer
