//! The mail worker: sends the messages of the mail outbox (`store::mail`) over SMTP.
//!
//! One loop per process claims due messages with a lease (`lease_owner`, `leased_until`),
//! sends each over its own SMTP connection (a few at a time) and records the outcome:
//! sent; retried on the webhook schedule ([`RetrySchedule`], base
//! `REHOME_MAIL_RETRY_BASE_MS`, doubling up to an hour) for [`RETRY_WINDOW`] after the
//! message was queued; or failed for good. A 5xx answer about the message itself (an
//! unknown or refused recipient, a rejected sender or content) fails it at once, as does an
//! address or attachment that cannot make a message; a connection error, a timeout, a 4xx
//! answer or a 5xx answer about the session (authentication, an unsupported command, which
//! are the server's configuration, not the message's) is retried. The loop wakes when mail
//! is queued ([`MailJobs::wake`]) and at least every `REHOME_MAIL_POLL_MS` (mail queued by
//! other nodes, retries falling due, leases of a crashed worker running out).
//!
//! A lease outlasts any attempt (twice [`SEND_TIMEOUT`] plus a margin), so a live worker
//! never loses one and two nodes never send a message at the same time. Delivery is at
//! least once: a worker that dies after the server took a message but before recording
//! it leaves the message to be sent again when the lease runs out.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use lettre::address::AddressError;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::queue::{finish_round, Failures, Queue, Runner};
use super::retry::{random_unit, RetrySchedule};
use crate::config::smtp::{transport, SEND_TIMEOUT};
use crate::config::Config;
use rehome_store::{ClaimedMail, MailOutcome, Store, StoreError};

/// How long a message is retried after it was queued (decisions 10.6: a mail server that is
/// down delays mail, never loses it); then it is failed.
pub const RETRY_WINDOW: Duration = Duration::from_secs(3 * 24 * 60 * 60);
/// Messages claimed (and sent concurrently) per round.
const BATCH: i64 = 8;

/// Wakes the mail worker. Call [`MailJobs::wake`] after committing a transaction that
/// queued mail (`store::enqueue_mail`); without it the mail still goes at the next poll.
#[derive(Debug, Clone, Default)]
pub struct MailJobs(Arc<Notify>);

impl MailJobs {
    pub fn wake(&self) {
        self.0.notify_one();
    }
}

/// The worker's settings, from [`Config`].
#[derive(Debug, Clone, Copy)]
pub struct MailSettings {
    pub poll: Duration,
    pub schedule: RetrySchedule,
}

impl MailSettings {
    pub fn from_config(config: &Config) -> Self {
        Self {
            poll: Duration::from_millis(config.mail_poll_ms),
            schedule: RetrySchedule::doubling(Duration::from_millis(config.mail_retry_base_ms), RETRY_WINDOW),
        }
    }
}

/// Why a message could not be built: always permanent (the same row fails the same way).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("invalid recipient address: {0}")]
    Recipient(AddressError),
    #[error("invalid attachment media type {0:?}")]
    AttachmentType(String),
    #[error("cannot build the message: {0}")]
    Message(#[from] lettre::error::Error),
}

/// The message of a queued row: From `from`, To the row's address, its subject, a UTF-8
/// plain text body (beside its HTML part, `multipart/alternative`, when the row has one) and,
/// when the row has one, its attachment (then `multipart/mixed`).
/// lettre validates the address (a line break or a second address is refused) and encodes
/// the subject, so nothing a row holds can add a header.
pub fn build_message(from: &Mailbox, mail: &ClaimedMail) -> Result<Message, BuildError> {
    let to: Mailbox = mail.to_address.parse().map_err(BuildError::Recipient)?;
    let builder = Message::builder()
        .message_id(Some(message_id(from, mail)))
        .from(from.clone())
        .to(to)
        .subject(mail.subject.as_str());
    let attachment = match (&mail.attachment_name, &mail.attachment_type, &mail.attachment) {
        (Some(name), Some(kind), Some(bytes)) => {
            let kind = ContentType::parse(kind).map_err(|_| BuildError::AttachmentType(kind.clone()))?;
            Some(Attachment::new(name.clone()).body(bytes.clone(), kind))
        }
        _ => None,
    };
    let text = mail.text_body.clone();
    let message = match (&mail.html_body, attachment) {
        (Some(html), Some(attachment)) => builder.multipart(
            MultiPart::mixed().multipart(MultiPart::alternative_plain_html(text, html.clone())).singlepart(attachment),
        )?,
        (Some(html), None) => builder.multipart(MultiPart::alternative_plain_html(text, html.clone()))?,
        (None, Some(attachment)) => {
            builder.multipart(MultiPart::mixed().singlepart(SinglePart::plain(text)).singlepart(attachment))?
        }
        (None, None) => builder.singlepart(SinglePart::plain(text))?,
    };
    Ok(message)
}

/// The `Message-ID` of a queued row, the same at every attempt: should a message be sent
/// twice (a worker that died after the server took it), mail clients see one message.
fn message_id(from: &Mailbox, mail: &ClaimedMail) -> String {
    let queued = mail.created_at.get().timestamp_micros();
    format!("<rehome.mail.{}.{queued}@{}>", mail.id, from.email.domain())
}

/// True when an SMTP reply code refuses the message itself, so sending it again cannot
/// succeed: 5xx (501 included: an argument, the address, is refused) except the codes
/// about the session (500, 502–504: a command the server does not take; 530, 534, 535, 538:
/// authentication), which are the server's configuration and would fail every message alike
/// until it is fixed.
pub fn is_permanent_code(code: u16) -> bool {
    (500..600).contains(&code) && !matches!(code, 500 | 502..=504 | 530 | 534 | 535 | 538)
}

/// The outcome of a failed attempt: failed for good when `permanent`, else a retry on
/// `schedule` (the `attempts`-th failure, `unit` picking the jitter) if it still falls
/// within the window that opened when the message was queued at `queued_at`.
pub fn after_failure(
    schedule: &RetrySchedule,
    attempts: i64,
    queued_at: DateTime<Utc>,
    now: DateTime<Utc>,
    unit: f64,
    error: String,
    permanent: bool,
) -> MailOutcome {
    if permanent {
        return MailOutcome::Failed { error };
    }
    let window = TimeDelta::from_std(schedule.window).unwrap_or(TimeDelta::days(3));
    let failures = u32::try_from(attempts.max(1)).unwrap_or(u32::MAX);
    match schedule.next_attempt(failures, now, queued_at + window, unit) {
        Some(at) => MailOutcome::Retry { at, error },
        None => MailOutcome::Failed { error: format!("gave up after {attempts} attempts: {error}") },
    }
}

/// Claims, sends and records messages.
pub struct MailWorker {
    store: Store,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    settings: MailSettings,
    wake: MailJobs,
    /// This worker's lease owner id.
    owner: String,
}

impl MailWorker {
    /// The worker of a configuration with mail enabled; an error names the setting that is
    /// wrong (already checked by `Config::resolve`).
    pub fn new(store: Store, config: &Config, wake: MailJobs) -> anyhow::Result<Self> {
        let (Some(url), Some(from)) = (&config.smtp_url, &config.mail_from) else {
            anyhow::bail!("mail is not configured (REHOME_SMTP_URL and REHOME_MAIL_FROM)");
        };
        let transport = transport(url.expose()).map_err(|e| anyhow::anyhow!("REHOME_SMTP_URL is not usable: {e}"))?;
        let from = from.parse().map_err(|e| anyhow::anyhow!("REHOME_MAIL_FROM is not an address: {e}"))?;
        let owner = format!("mail-{}", uuid::Uuid::new_v4().simple());
        Ok(Self { store, transport, from, settings: MailSettings::from_config(config), wake, owner })
    }

    /// The runner of this worker, woken by [`MailJobs::wake`].
    pub fn runner(self) -> Arc<Runner<Self>> {
        let (wake, poll) = (self.wake.0.clone(), self.settings.poll);
        Runner::new(self, wake, poll)
    }

    fn lease(&self) -> TimeDelta {
        TimeDelta::from_std(SEND_TIMEOUT * 2 + Duration::from_secs(10)).unwrap_or(TimeDelta::minutes(2))
    }
}

impl Queue for MailWorker {
    const NAME: &'static str = "mail";

    /// Claims a batch, sends each message concurrently and records each outcome as it
    /// comes. Answers how many were claimed.
    async fn round(self: Arc<Self>, failures: Failures) -> Result<usize, StoreError> {
        let now = Utc::now();
        let claimed = self.store.claim_mail(&self.owner, now, now + self.lease(), BATCH).await?;
        let count = claimed.len();
        let mut tasks = JoinSet::new();
        for mail in claimed {
            let (worker, failures) = (self.clone(), failures.clone());
            tasks.spawn(async move {
                let outcome = worker.attempt(&mail).await;
                worker.record(&mail, &outcome, &failures).await;
            });
        }
        finish_round(tasks, Self::NAME, &failures).await;
        Ok(count)
    }

    async fn release(&self) -> Result<(), StoreError> {
        self.store.release_mail_leases(&self.owner).await.map(drop)
    }
}

impl MailWorker {
    /// One attempt at `mail`: what to record.
    async fn attempt(&self, mail: &ClaimedMail) -> MailOutcome {
        if mail.undecryptable {
            let error = "its sealed text does not open with this server's data key (REHOME_DATA_KEY)".to_owned();
            return MailOutcome::Failed { error };
        }
        let message = match build_message(&self.from, mail) {
            Ok(message) => message,
            Err(e) => return MailOutcome::Failed { error: e.to_string() },
        };
        let sent = tokio::time::timeout(SEND_TIMEOUT, self.transport.send(message)).await;
        let (error, permanent) = match sent {
            Ok(Ok(_)) => return MailOutcome::Sent,
            Ok(Err(e)) => (e.to_string(), e.status().is_some_and(|code| is_permanent_code(code.into()))),
            Err(_) => (format!("no answer within {} s", SEND_TIMEOUT.as_secs()), false),
        };
        let queued_at = mail.created_at.get();
        after_failure(&self.settings.schedule, mail.attempts, queued_at, Utc::now(), random_unit(), error, permanent)
    }

    async fn record(&self, mail: &ClaimedMail, outcome: &MailOutcome, failures: &Failures) {
        match outcome {
            MailOutcome::Sent => tracing::info!(mail_id = mail.id, attempts = mail.attempts, "mail sent"),
            MailOutcome::Retry { at, error } => {
                tracing::warn!(mail_id = mail.id, attempts = mail.attempts, next_attempt_at = %at, error = %error,
                    "mail not sent; will retry");
            }
            // A refused address is the sender's mistake, not the server's: a warning.
            MailOutcome::Failed { error } => {
                tracing::warn!(mail_id = mail.id, attempts = mail.attempts, error = %error, "mail failed for good");
            }
        }
        match self.store.record_mail(&self.owner, mail.id, outcome).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(mail_id = mail.id, "mail outcome not recorded: the lease was lost"),
            Err(e) => failures.record(Self::NAME, &format!("cannot record the outcome of mail {}", mail.id), &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rehome_domain::time::Ts;

    fn claimed(to: &str, subject: &str) -> ClaimedMail {
        ClaimedMail {
            id: 1,
            to_address: to.to_owned(),
            subject: subject.to_owned(),
            text_body: "Hello, Zoë.\nYour link: https://rehome.example/x".to_owned(),
            html_body: None,
            attachment_name: None,
            attachment_type: None,
            attachment: None,
            attempts: 1,
            created_at: Ts::parse("2026-11-23T10:00:00.123456Z").unwrap(),
            undecryptable: false,
        }
    }

    #[test]
    fn a_message_with_html_carries_both_parts_as_alternatives() {
        let mut mail = claimed("ada@example.com", "Your order #7");
        mail.html_body = Some("<p>Hello, Zoë.</p>".to_owned());
        let formatted = text(&build_message(&from(), &mail).unwrap());
        assert!(formatted.contains("multipart/alternative"), "{formatted}");
        assert!(formatted.contains("text/plain; charset=utf-8") && formatted.contains("text/html; charset=utf-8"));
        mail.attachment_name = Some("statement.pdf".into());
        mail.attachment_type = Some("application/pdf".into());
        mail.attachment = Some(b"%PDF-1.7".to_vec());
        let formatted = text(&build_message(&from(), &mail).unwrap());
        assert!(formatted.contains("multipart/mixed") && formatted.contains("multipart/alternative"), "{formatted}");
    }

    fn from() -> Mailbox {
        "Rehome <noreply@rehome.example>".parse().unwrap()
    }

    fn text(message: &Message) -> String {
        String::from_utf8(message.formatted()).unwrap()
    }

    /// The header lines (before the first blank line) of a formatted message.
    fn header_names(formatted: &str) -> Vec<String> {
        let head = formatted.split("\r\n\r\n").next().unwrap();
        head.split("\r\n")
            .filter(|line| !line.starts_with([' ', '\t']))
            .filter_map(|line| line.split(':').next())
            .map(str::to_ascii_lowercase)
            .collect()
    }

    #[test]
    fn a_plain_message_has_the_sender_recipient_subject_and_utf8_text() {
        let message = build_message(&from(), &claimed("zoe@brand.example", "You are invited")).unwrap();
        let formatted = text(&message);
        assert!(formatted.contains("From: Rehome <noreply@rehome.example>\r\n"), "{formatted}");
        assert!(formatted.contains("To: zoe@brand.example\r\n"), "{formatted}");
        assert!(formatted.contains("Subject: You are invited\r\n"), "{formatted}");
        assert!(formatted.contains("Content-Type: text/plain; charset=utf-8"), "{formatted}");
        let again = text(&build_message(&from(), &claimed("zoe@brand.example", "You are invited")).unwrap());
        let id = |f: &str| f.lines().find(|l| l.starts_with("Message-ID: ")).map(str::to_owned);
        assert!(id(&formatted).is_some_and(|i| i.starts_with("Message-ID: <rehome.mail.1.")), "{formatted}");
        assert!(id(&formatted).is_some_and(|i| i.ends_with("@rehome.example>")), "{formatted}");
        assert_eq!(id(&formatted), id(&again), "the same row, the same Message-ID");
        let envelope = message.envelope();
        assert_eq!(envelope.to().iter().map(ToString::to_string).collect::<Vec<_>>(), ["zoe@brand.example"]);
    }

    #[test]
    fn an_attachment_makes_a_mixed_message_with_its_name_and_type() {
        let mail = ClaimedMail {
            attachment_name: Some("statement-42.pdf".into()),
            attachment_type: Some("application/pdf".into()),
            attachment: Some(b"%PDF-1.7 \x00\x01\xff".to_vec()),
            ..claimed("billing@brand.example", "Statement 42")
        };
        let formatted = text(&build_message(&from(), &mail).unwrap());
        assert!(formatted.contains("multipart/mixed"), "{formatted}");
        assert!(formatted.contains("Content-Type: application/pdf"), "{formatted}");
        assert!(formatted.contains("filename=\"statement-42.pdf\""), "{formatted}");
        let bad = ClaimedMail { attachment_type: Some("not a type".into()), ..mail };
        assert!(matches!(build_message(&from(), &bad), Err(BuildError::AttachmentType(_))));
    }

    #[test]
    fn a_line_break_in_the_subject_cannot_add_a_header() {
        for subject in ["Hi\r\nBcc: victim@evil.example", "Hi\nBcc: victim@evil.example", "Hi\rBcc: x@evil.example"] {
            let formatted = text(&build_message(&from(), &claimed("zoe@brand.example", subject)).unwrap());
            let names = header_names(&formatted);
            assert!(!names.iter().any(|n| n == "bcc"), "{subject:?} added a header: {formatted}");
            assert_eq!(names.iter().filter(|n| *n == "subject").count(), 1, "{formatted}");
        }
    }

    #[test]
    fn a_bad_or_injected_recipient_is_refused_not_a_panic() {
        for to in [
            "",
            "not an address",
            "zoe@brand.example\r\nBcc: victim@evil.example",
            "zoe@brand.example, victim@evil.example",
            "zoe@brand.example\nSubject: x",
        ] {
            let result = build_message(&from(), &claimed(to, "Hi"));
            assert!(matches!(result, Err(BuildError::Recipient(_))), "{to:?} was accepted");
        }
    }

    #[test]
    fn permanent_codes_are_refusals_of_the_message_not_of_the_session() {
        let table = [
            (250, false),
            (421, false),
            (450, false),
            (451, false),
            (452, false),
            (500, false),
            (501, true),
            (502, false),
            (503, false),
            (504, false),
            (521, true),
            (530, false),
            (534, false),
            (535, false),
            (538, false),
            (550, true),
            (551, true),
            (552, true),
            (553, true),
            (554, true),
            (556, true),
        ];
        for (code, permanent) in table {
            assert_eq!(is_permanent_code(code), permanent, "{code}");
        }
    }

    #[test]
    fn failures_are_retried_for_three_days_then_given_up() {
        let schedule = RetrySchedule::doubling(Duration::from_secs(30), RETRY_WINDOW);
        let queued = Utc::now();
        let retry = after_failure(&schedule, 1, queued, queued, 0.0, "refused".into(), false);
        assert_eq!(retry, MailOutcome::Retry { at: queued + TimeDelta::seconds(30), error: "refused".into() });
        let later = queued + TimeDelta::hours(60);
        assert_eq!(
            after_failure(&schedule, 40, queued, later, 0.0, "refused".into(), false),
            MailOutcome::Retry { at: later + TimeDelta::hours(1), error: "refused".into() }
        );
        let last = queued + TimeDelta::hours(71) + TimeDelta::minutes(30);
        assert!(matches!(
            after_failure(&schedule, 80, queued, last, 0.0, "refused".into(), false),
            MailOutcome::Failed { .. }
        ));
        assert_eq!(
            after_failure(&schedule, 1, queued, queued, 0.0, "550 no such user".into(), true),
            MailOutcome::Failed { error: "550 no such user".into() }
        );
        // Failing instantly, a message is tried 1 + 77 times over the three days: 7 doubling
        // gaps (63.5 min), then hourly.
        assert_eq!(schedule.nominal_gaps().len(), 77);
    }
}
