//! The dashboard's sign-in over real HTTP (decisions 8.1–8.4, 9.1–9.3): a cookie-keeping
//! client that follows no redirects, so each answer (303s included) is checked as sent.

mod account;
mod bulk_drafts;
mod bursts;
mod deliveries;
mod failures;
mod headers;
mod invite_accept;
mod orders;
mod pages;
mod resets;
mod sessions;
mod sign_in;
mod sign_in_memory;
mod team_keys;
mod two_step;
mod words;

use std::collections::HashMap;

use rehome::domain::time::Ts;
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};

use crate::helpers::{on_raw, Partner, TestApp};

/// The password every test user gets.
pub const PASSWORD: &str = "correct horse battery staple";

pub const INCORRECT: &str = "The email or password is incorrect.";
pub const LOCKED: &str = "Too many attempts, try again later.";

/// One answer, read whole.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    pub fn location(&self) -> Option<&str> {
        self.headers.get(LOCATION).and_then(|v| v.to_str().ok())
    }

    /// Asserts a 303 to `to`.
    pub fn assert_redirect(&self, to: &str) {
        assert_eq!((self.status, self.location()), (303, Some(to)), "body: {}", self.body);
    }

    /// The value of the first `<input name="…" value="…">` named `name` (hidden fields).
    pub fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start =
            self.body.find(&marker).unwrap_or_else(|| panic!("no field {name} in {}", self.body)) + marker.len();
        let end = self.body[start..].find('"').expect("closing quote") + start;
        self.body[start..end].to_owned()
    }

    pub fn csrf(&self) -> String {
        self.field("csrf")
    }

    /// The value of the read-only text field with `id="…"` (a secret shown once).
    pub fn value_of(&self, id: &str) -> String {
        let marker = format!("id=\"{id}\" type=\"text\" value=\"");
        let start = self.body.find(&marker).unwrap_or_else(|| panic!("no #{id} in {}", self.body)) + marker.len();
        let end = self.body[start..].find('"').expect("closing quote") + start;
        self.body[start..end].to_owned()
    }

    /// The text of the element with `id="…"` (the enrolment page's secret).
    pub fn text_of(&self, id: &str) -> String {
        let marker = format!("id=\"{id}\">");
        let start = self.body.find(&marker).unwrap_or_else(|| panic!("no #{id} in {}", self.body)) + marker.len();
        let end = self.body[start..].find('<').expect("end of text") + start;
        self.body[start..end].to_owned()
    }
}

/// A browser of the dashboard: keeps cookies, follows no redirects.
pub struct Browser {
    base: String,
    client: reqwest::Client,
    pub cookies: HashMap<String, String>,
}

impl Browser {
    pub fn new(app: &TestApp) -> Self {
        Self::at(&app.base)
    }

    /// A browser of the server at `base` (`http://127.0.0.1:PORT`).
    pub fn at(base: &str) -> Self {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Self { base: base.to_owned(), client, cookies: HashMap::new() }
    }

    /// The same browser, its cookies kept, against the service at another address (a
    /// restarted server).
    pub fn moved_to(mut self, base: &str) -> Self {
        self.base = base.to_owned();
        self
    }

    /// The `Cookie` header this browser sends.
    pub fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    async fn read(&mut self, response: reqwest::Response) -> Page {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        for set in headers.get_all(SET_COOKIE) {
            let set = set.to_str().expect("ascii cookie");
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').expect("name=value");
            if value.is_empty() || attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let body = response.text().await.expect("body");
        Page { status, headers, body }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.get_with(path, &[]).await
    }

    /// [`Browser::get`] with extra request headers (`HX-Request`, as htmx sends).
    pub async fn get_with(&mut self, path: &str, headers: &[(&str, &str)]) -> Page {
        let mut request = self.client.get(format!("{}{path}", self.base)).header("cookie", self.cookie_header());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("GET");
        self.read(response).await
    }

    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.post_with(path, fields, &[]).await
    }

    /// [`Browser::post`] with extra request headers (`Origin`).
    pub async fn post_with(&mut self, path: &str, fields: &[(&str, &str)], headers: &[(&str, &str)]) -> Page {
        let mut request =
            self.client.post(format!("{}{path}", self.base)).header("cookie", self.cookie_header()).form(fields);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("POST");
        self.read(response).await
    }

    /// Posts a multipart form of `fields` and, when given, one file: `(field, file name,
    /// media type, bytes)`.
    pub async fn post_multipart(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        file: Option<(&str, &str, &str, &[u8])>,
    ) -> Page {
        self.post_files(path, fields, file.as_slice()).await
    }

    /// Posts a multipart form of `fields` and `files`, each `(field, file name, media type,
    /// bytes)`, in order.
    pub async fn post_files(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        files: &[(&str, &str, &str, &[u8])],
    ) -> Page {
        let boundary = "rehome-test-boundary-7f3a";
        let mut body = Vec::new();
        for (key, value) in fields {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{key}\"\r\n\r\n{value}\r\n").as_bytes(),
            );
        }
        for (field, name, kind, bytes) in files {
            let head = format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: {kind}\r\n\r\n"
            );
            body.extend_from_slice(head.as_bytes());
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body)
            .send()
            .await
            .expect("POST");
        self.read(response).await
    }

    /// Opens the sign-in page and submits it.
    pub async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let form = self.get("/dashboard/login").await;
        assert_eq!(form.status, 200);
        let csrf = form.csrf();
        self.post("/dashboard/login", &[("email", email), ("password", password), ("csrf", &csrf)]).await
    }

    /// Signs in and asserts the home page is reached.
    pub async fn signed_in(app: &TestApp, email: &str) -> Self {
        let mut browser = Self::new(app);
        browser.sign_in(email, PASSWORD).await.assert_redirect("/dashboard");
        browser
    }

    /// The session token (the `rehome_session` cookie).
    pub fn session(&self) -> Option<String> {
        self.cookies.get("rehome_session").cloned()
    }
}

/// A brand with an admin who has [`PASSWORD`]; answers the partner and the admin's email.
pub async fn admin(app: &TestApp, slug: &str) -> (Partner, String) {
    let partner = app.partner(slug).await;
    set_password(app, partner.user_id).await;
    (partner, format!("ada@{slug}.example"))
}

pub async fn set_password(app: &TestApp, user_id: i64) {
    rehome::usecases::people::passwords::set_password(&app.store, user_id, PASSWORD).await.expect("set password");
}

/// The brand's audit actions, oldest first.
pub async fn audit_actions(app: &TestApp, brand_id: i64) -> Vec<String> {
    let mut entries = app.store.audit_page(brand_id, 100, None).await.expect("audit");
    entries.reverse();
    entries.into_iter().map(|e| e.action).collect()
}

/// Runs one statement with binds on the test's database (valid on both backends).
pub async fn sql_ts(app: &TestApp, sql: &str, at: Ts, id: i64) {
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        sqlx::query(sql).bind(at).bind(id).execute(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    });
    raw.close().await;
}

/// One integer of the test's database.
pub async fn sql_i64(app: &TestApp, sql: &str) -> Option<i64> {
    let raw = app.db.raw().await;
    let value = on_raw!(&raw, |pool| {
        sqlx::query_scalar::<_, Option<i64>>(sql).fetch_one(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
    });
    raw.close().await;
    value
}
