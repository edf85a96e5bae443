//! TODO(helper): hash
