//! Pure parts of the etcd registry backend (in progress).
