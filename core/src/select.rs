//! TODO(helper): select
