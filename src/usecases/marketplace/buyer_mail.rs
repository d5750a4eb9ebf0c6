//! The mails a storefront buyer gets (decisions 14.5), each written once and sent as HTML
//! and as plain text with the same words: the order's confirmation and "collection booked".

use askama::Template;

use crate::store::MailBody;

/// A buyer's mail: a heading, a greeting, a lead paragraph, the order's details, closing
/// paragraphs and a link.
#[derive(Debug, Clone, Template)]
#[template(path = "mail/buyer.html")]
pub struct BuyerMail {
    pub subject: String,
    pub heading: String,
    pub greeting: String,
    pub opening: String,
    pub details: Vec<(&'static str, String)>,
    pub closing: Vec<String>,
    /// The link's words and address.
    pub link: Option<(&'static str, String)>,
}

impl BuyerMail {
    /// The plain text part: the same words, one detail a line.
    pub fn text(&self) -> String {
        let mut text = format!("{}\n\n{}\n\n", self.greeting, self.opening);
        if !self.details.is_empty() {
            for (term, value) in &self.details {
                text.push_str(&format!("{term}: {value}\n"));
            }
            text.push('\n');
        }
        for paragraph in &self.closing {
            text.push_str(paragraph);
            text.push_str("\n\n");
        }
        if let Some((words, url)) = &self.link {
            text.push_str(&format!("{words}: {url}\n"));
        }
        text.trim_end().to_owned() + "\n"
    }

    /// Both parts. Should the HTML not render (it cannot fail on these fields, but if it
    /// did), the plain text goes alone.
    pub fn body(&self) -> MailBody {
        let html = self.render().map_err(|e| tracing::error!(error = %e, "cannot render a buyer's mail")).ok();
        MailBody { text: self.text(), html }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_parts_say_the_same_and_the_html_escapes_what_buyers_typed() {
        let mail = BuyerMail {
            subject: "Your order #7: Oak <sofa>".into(),
            heading: "Thank you for your order".into(),
            greeting: "Hello Ada <b>Lovelace</b>,".into(),
            opening: "Your order #7 is placed.".into(),
            details: vec![("Price", "£1,250.00".into())],
            closing: vec!["We will email you.".into()],
            link: Some(("See your order", "https://shop.example/marketplace/orders/abc".into())),
        };
        let body = mail.body();
        assert!(body.text.starts_with("Hello Ada <b>Lovelace</b>,\n\nYour order #7 is placed.\n\nPrice: £1,250.00\n"));
        assert!(body.text.ends_with("See your order: https://shop.example/marketplace/orders/abc\n"));
        let html = body.html.expect("the HTML part");
        assert!(html.contains("Hello Ada &#60;b&#62;Lovelace&#60;/b&#62;,") || html.contains("Hello Ada &lt;b&gt;"), "{html}");
        assert!(html.contains(r#"href="https://shop.example/marketplace/orders/abc""#));
        assert!(html.contains("£1,250.00") && html.contains("We will email you."));
    }
}
