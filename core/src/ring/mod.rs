//! TODO(helper): ring
