//! The mail outbox: messages written in the transaction of what caused them, sent by the
//! mail worker (`jobs::mail`) and retried until the SMTP server takes them.

use super::{on_conn, Conn, StoreError, Ts};

/// A message to queue. The sender is the server's `REHOME_MAIL_FROM`.
#[derive(Debug, Clone)]
pub struct NewMail<'a> {
    /// The brand the message is about, when there is one.
    pub brand_id: Option<i64>,
    pub to: &'a str,
    pub subject: &'a str,
    pub text: &'a str,
    /// `(file name, media type, bytes)`.
    pub attachment: Option<(&'a str, &'a str, &'a [u8])>,
}

/// Queues `mail` on `conn`, the caller's transaction, due at once.
pub async fn enqueue_mail(conn: Conn<'_>, mail: &NewMail<'_>) -> Result<(), StoreError> {
    let now = Ts::now();
    let (name, kind, bytes) = match mail.attachment {
        Some((name, kind, bytes)) => (Some(name), Some(kind), Some(bytes)),
        None => (None, None, None),
    };
    on_conn!(conn, |c| {
        sqlx::query(
            "INSERT INTO mail_outbox (brand_id, to_address, subject, text_body, attachment_name, attachment_type,
                                      attachment, created_at, next_attempt_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
        )
        .bind(mail.brand_id)
        .bind(mail.to)
        .bind(mail.subject)
        .bind(mail.text)
        .bind(name)
        .bind(kind)
        .bind(bytes)
        .bind(now)
        .execute(&mut *c)
        .await?;
        Ok(())
    })
}
