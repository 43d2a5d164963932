//! Benchmark tools for fedsearch: the one error type of the library.
//!
//! Messages are safe to print: they never contain the signing secret or the token.

/// What can go wrong before or while generating load.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A flag has a value outside its bounds; the message names the flag.
    #[error("{0}")]
    InvalidArgument(String),
    /// The target is not a loopback address.
    #[error("{0}")]
    NotLoopback(String),
    /// The target could not be reached or did not become healthy.
    #[error("{0}")]
    Unavailable(String),
    /// The scripted sources' timer thread could not be started.
    #[error("the timer thread did not start: {0}")]
    Timer(std::io::Error),
}
