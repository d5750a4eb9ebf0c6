//! The SMTP transport a `REHOME_SMTP_URL` names: what the settings check at start-up and
//! what the mail job sends through, so that a URL the check passes is one the job can use.

use std::time::Duration;

use lettre::transport::smtp::Error as SmtpError;
use lettre::{AsyncSmtpTransport, Tokio1Executor};

/// The longest one attempt may take: connecting, every SMTP command and the whole exchange.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// The SMTP transport of `url` (`smtp://`, `smtp://…?tls=required`, `smtps://`, as lettre
/// reads them), with [`SEND_TIMEOUT`] on every step. The error never repeats the URL (it
/// may hold a password).
pub fn transport(url: &str) -> Result<AsyncSmtpTransport<Tokio1Executor>, SmtpError> {
    Ok(AsyncSmtpTransport::<Tokio1Executor>::from_url(url)?.timeout(Some(SEND_TIMEOUT)).build())
}
