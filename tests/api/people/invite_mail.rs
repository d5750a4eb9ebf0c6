//! An invitation emailed through the outbox to a real SMTP server (decisions 8.4): with the
//! mail server down the invitation is still answered and its mail waits; once the server is
//! up, the mail arrives once, carrying the link the API answered.

use super::invite;
use crate::helpers::{spawn_app_with_mail, SmtpServer, TEST_MAIL_FROM};

#[tokio::test]
async fn an_invitation_mailed_while_the_smtp_server_is_down_arrives_once_when_it_is_up() {
    let Some(mut smtp) = SmtpServer::down("invitation_mail_down_then_up") else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let partner = app.partner("acme").await;

    let invited = invite(&app, &partner.key, "Zoe@Example.com", "Zoe Keys", "member").await;
    let url = invited["invite_url"].as_str().expect("invite_url").to_owned();
    assert!(url.contains("/dashboard/invite/"), "{url}");
    let tried = crate::mail::wait_outbox(&app, 20, |rows| rows.first().is_some_and(|r| r.last_error.is_some())).await;
    assert!(tried[0].sent_at.is_none(), "{tried:?}");
    assert!(smtp.received().is_empty());

    smtp.up().await;
    let received = smtp.wait_for(1, 30).await;
    assert_eq!(received.len(), 1);
    let mail = &received[0];
    assert_eq!(mail.rcpt_tos, ["zoe@example.com"]);
    assert!(mail.from.contains("noreply@rehome.example"), "{} vs {TEST_MAIL_FROM}", mail.from);
    assert!(mail.text.contains(&url), "the mail carries the answered link: {}", mail.text);
    crate::mail::wait_outbox(&app, 10, |rows| rows.iter().all(|r| r.sent_at.is_some())).await;
    assert_eq!(app.run_pending().await, 0, "nothing left to send");
    assert_eq!(smtp.received().len(), 1, "sent once");
    app.stop().await;
}
