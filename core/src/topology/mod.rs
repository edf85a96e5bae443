//! TODO(helper): topology
