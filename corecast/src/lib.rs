//! corecast: zero-copy one-to-many message passing between processes.
