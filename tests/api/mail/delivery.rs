//! What arrives: sender, recipient, subject, UTF-8 text, attachments, and nothing a row
//! holds can add a header or a recipient.

use super::*;
use crate::helpers::{spawn_app_with_mail, SmtpServer, TEST_MAIL_FROM};

#[tokio::test]
async fn a_queued_message_arrives_with_its_sender_recipient_subject_and_text() {
    let Some(smtp) = SmtpServer::start("a_queued_message_arrives").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let text = "Hello Zoë,\n\nyou are invited to Acme on Rehome — £5 off: https://rehome.example/i/x\n";
    enqueue(&app, &[plain("zoe@brand.example", "Invitation to Acme — ça va", text)]).await;

    let received = smtp.wait_for(1, 20).await;
    assert_eq!(received.len(), 1, "{received:?}");
    let mail = &received[0];
    assert_eq!(mail.from, TEST_MAIL_FROM);
    assert_eq!(mail.to, "zoe@brand.example");
    assert_eq!(mail.rcpt_tos, ["zoe@brand.example"]);
    assert_eq!(mail.subject, "Invitation to Acme — ça va");
    assert_eq!(mail.text.trim_end(), text.trim_end());
    assert!(mail.attachments.is_empty());
    let content_type = mail.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-type")).map(|(_, v)| v);
    assert!(content_type.is_some_and(|v| v.contains("text/plain") && v.contains("utf-8")), "{:?}", mail.headers);
    let header = |name: &str| mail.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    assert!(header("message-id").is_some_and(|v| v.ends_with("@rehome.example>")), "{:?}", mail.headers);
    assert!(header("date").is_some(), "{:?}", mail.headers);

    let rows = wait_outbox(&app, 5, |rows| rows.iter().all(|r| r.sent_at.is_some())).await;
    assert_eq!(rows.len(), 1);
    assert!(rows[0].sent_at.is_some() && rows[0].failed_at.is_none(), "{rows:?}");
    assert_eq!(rows[0].attempts, 1);
    assert_eq!(rows[0].last_error, None);
    assert!(rows[0].erased, "the text (an invitation link) outlived its delivery: {rows:?}");
    app.stop().await;
}

#[tokio::test]
async fn an_attachment_arrives_with_its_bytes_name_and_media_type() {
    let Some(smtp) = SmtpServer::start("an_attachment_arrives").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    // Every byte value, and line ends of every kind, must come back exactly.
    let mut pdf = b"%PDF-1.7\r\n%\xe2\xe3\xcf\xd3\n".to_vec();
    pdf.extend((0..=255u8).cycle().take(70_000));
    pdf.extend_from_slice(b"\r\n.\r\n\n.\n%%EOF");
    let mail = NewMail {
        brand_id: None,
        attachment: Some(("statement-2026-0042.pdf", "application/pdf", &pdf)),
        ..plain("billing@brand.example", "Statement 2026-0042", "Your statement is attached.")
    };
    enqueue(&app, &[mail]).await;

    let received = smtp.wait_for(1, 20).await;
    assert_eq!(received.len(), 1);
    let mail = &received[0];
    assert_eq!(mail.subject, "Statement 2026-0042");
    assert_eq!(mail.text.trim_end(), "Your statement is attached.");
    assert_eq!(mail.attachments.len(), 1);
    let (name, kind, bytes) = &mail.attachments[0];
    assert_eq!((name.as_str(), kind.as_str()), ("statement-2026-0042.pdf", "application/pdf"));
    assert!(bytes == &pdf, "the attachment's bytes changed ({} bytes, {} sent)", bytes.len(), pdf.len());
    let rows = wait_outbox(&app, 5, |rows| rows[0].sent_at.is_some()).await;
    assert!(rows[0].erased, "{rows:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_line_break_in_a_subject_adds_no_header_and_no_recipient() {
    let Some(smtp) = SmtpServer::start("a_line_break_in_a_subject").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    enqueue(&app, &[plain("zoe@brand.example", "Hello\r\nBcc: victim@evil.example\r\nX-Evil: 1", "Hi")]).await;

    let received = smtp.wait_for(1, 20).await;
    assert_eq!(received.len(), 1);
    let mail = &received[0];
    assert_eq!(mail.rcpt_tos, ["zoe@brand.example"]);
    let names: Vec<String> = mail.headers.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
    assert!(!names.iter().any(|n| n == "bcc" || n == "x-evil"), "{:?}", mail.headers);
    assert_eq!(names.iter().filter(|n| *n == "subject").count(), 1);
    assert!(mail.subject.starts_with("Hello") && mail.subject.contains("victim@evil.example"), "{}", mail.subject);
    app.stop().await;
}

#[test]
fn a_bad_smtp_url_or_sender_stops_the_server_at_start_without_printing_the_password() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = format!("sqlite://{}", dir.path().join("rehome.db").display());
    let media = dir.path().join("media").display().to_string();
    let cases = [
        ("http://mailer:hunter2-secret@mail.example", TEST_MAIL_FROM, "REHOME_SMTP_URL"),
        ("smtp://mailer:hunter2-secret@mail.example?tls=sometimes", TEST_MAIL_FROM, "REHOME_SMTP_URL"),
        ("smtps://mailer:hunter2-secret@mail.example", "not an address", "REHOME_MAIL_FROM"),
        ("smtps://mailer:hunter2-secret@mail.example", "", "REHOME_MAIL_FROM"),
    ];
    for (url, from, named) in cases {
        let env = [
            ("REHOME_DATABASE_URL", db.as_str()),
            ("REHOME_MEDIA_DIR", media.as_str()),
            ("REHOME_SMTP_URL", url),
            ("REHOME_MAIL_FROM", from),
        ];
        let (ok, stdout, stderr) = crate::helpers::run_rehome(&["serve", "--addr", "127.0.0.1:0"], &env);
        assert!(!ok, "{url} / {from:?} started: {stdout}{stderr}");
        assert!(stderr.contains(named), "{url} / {from:?}: {stderr}");
        assert!(!format!("{stdout}{stderr}").contains("hunter2"), "the password was printed: {stdout}{stderr}");
    }
}

/// A message sealed with another data key than the server's (a server restored without its
/// key) cannot be opened: it is failed with a reason naming the key, never sent garbled.
#[tokio::test]
async fn a_message_sealed_with_another_data_key_is_failed_not_sent() {
    let Some(smtp) = SmtpServer::start("a_message_sealed_with_another_key").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let raw = app.db.raw().await;
    let foreign = rehome::store::Sealer::new(&[9; 32]);
    on_raw!(&raw, |pool| {
        let mut tx = pool.begin().await.expect("begin");
        let mail = plain("zoe@brand.example", "Invitation", "https://rehome.example/i/x");
        enqueue_mail((&mut *tx).into(), &foreign, &mail).await.expect("enqueue mail");
        tx.commit().await.expect("commit");
    });
    raw.close().await;
    let rows = wait_outbox(&app, 10, |rows| rows.iter().all(|r| r.failed_at.is_some())).await;
    assert!(rows[0].failed_at.is_some(), "{rows:?}");
    assert!(rows[0].last_error.as_deref().is_some_and(|e| e.contains("data key")), "{rows:?}");
    assert!(rows[0].erased, "{rows:?}");
    assert!(smtp.received().is_empty());
    app.stop().await;
}
