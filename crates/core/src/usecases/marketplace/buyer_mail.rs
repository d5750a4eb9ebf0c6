//! The mails a storefront buyer gets (decisions 14.5), each written once and sent as HTML
//! and as plain text with the same words: the order's confirmation and "collection booked".

use askama::Template;

use crate::config::Config;
use rehome_domain::money::Pence;
use rehome_domain::order::order_reference;
use rehome_domain::view::OrderRecord;
use rehome_store::{MailBody, OwnedMail};

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

/// The buyer's confirmation, composed from the order as written (none without mail):
/// `paid` when the buyer paid through the gateway.
pub fn confirmation<'a>(
    config: &Config,
    brand: &'a str,
    email: &'a str,
    name: &'a str,
    page: &'a str,
    paid: bool,
) -> impl Fn(&OrderRecord) -> Option<OwnedMail> + Sync + 'a {
    let mail_on = config.mail_enabled();
    move |order: &OrderRecord| {
        mail_on.then(|| {
            let mail = confirmation_mail(name, brand, order, page, paid);
            OwnedMail {
                brand_id: Some(order.brand_id),
                to: email.to_owned(),
                subject: mail.subject.clone(),
                body: mail.body(),
            }
        })
    }
}

/// The confirmation mail (decisions 14.3): what was bought, for how much, how it is paid and
/// delivered, and the order page's link.
fn confirmation_mail(name: &str, brand: &str, order: &OrderRecord, page: &str, paid: bool) -> BuyerMail {
    let total = Pence::new(order.total_pence()).pounds();
    let each = Pence::new(order.unit_price_pence).pounds();
    let reference = order_reference(order.id);
    let payment = if paid {
        format!("You have paid {total} by card. {brand} will arrange delivery to your address.")
    } else {
        format!("You pay nothing on this site: {brand} contacts you to take payment and to arrange delivery to your address.")
    };
    BuyerMail {
        subject: format!("Your order {reference}: {}", order.title),
        heading: format!("Thank you for your order {reference}"),
        greeting: format!("Hello {name},"),
        opening: format!("Thank you for your order {reference} on the rehome marketplace."),
        details: vec![
            ("Item", format!("{} × {}", order.title, order.quantity)),
            ("Price", if order.quantity > 1 { format!("{total} ({each} each)") } else { total.clone() }),
            ("Sold by", brand.to_owned()),
            ("Delivery window", order.window().words()),
        ],
        closing: vec![
            payment,
            format!("{brand} will confirm the day your piece is collected for delivery, and we will email you when they do."),
        ],
        link: Some(("Your order, at any time", page.to_owned())),
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
        assert!(
            html.contains("Hello Ada &#60;b&#62;Lovelace&#60;/b&#62;,") || html.contains("Hello Ada &lt;b&gt;"),
            "{html}"
        );
        assert!(html.contains(r#"href="https://shop.example/marketplace/orders/abc""#));
        assert!(html.contains("£1,250.00") && html.contains("We will email you."));
    }
}
