//! The `rehome` command line: `serve`, `brands`, `users`, `keys`, `remittances`,
//! `copy-to-postgres`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};

use crate::app::{shutdown_signal, Server};
use crate::config::{Config, LogFormat, Secret, DEFAULT_DATABASE_URL};
use crate::domain::key_request::key_prefix;
use crate::domain::time::Ts;
use crate::domain::user::{Role, Scopes};
use crate::logging;
use crate::store::{
    copy_sqlite_to_postgres, default_key_path, is_postgres_url, limit_sqlite_memory, PostgresStore, Sealer,
    SqliteStore, Store, DEFAULT_SQLITE_MEMORY_MIB,
};
use crate::usecases::accounts;
use crate::usecases::people::invitations;
use crate::usecases::people::passwords;
use crate::usecases::wallet::{self, statement::pounds};

#[derive(Debug, Parser)]
#[command(name = "rehome", version, about = "The rehome partner resale marketplace API")]
pub struct Cli {
    /// Database URL: `sqlite://FILE` (or a bare file path).
    #[arg(long, global = true, env = "REHOME_DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub database_url: String,

    /// SQLite only: the most memory, in MiB, SQLite keeps for all its connections together
    /// before it recycles cached pages (its soft heap limit); 0 for no limit.
    #[arg(long, global = true, env = "REHOME_SQLITE_MEMORY_MIB", default_value_t = DEFAULT_SQLITE_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub sqlite_memory_mib: u64,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server.
    Serve {
        // Boxed: the settings dwarf the other commands' arguments (clippy::large_enum_variant).
        #[command(flatten)]
        config: Box<Config>,
        /// Seed a demo brand, admin and key, and print a ready-to-run curl line. An
        /// existing demo is reused unchanged.
        #[arg(long)]
        demo: bool,
        /// With --demo: give the existing demo admin a new key and password (their sessions end).
        #[arg(long, requires = "demo")]
        demo_reset: bool,
    },
    /// Manage partner brands.
    #[command(subcommand)]
    Brands(BrandsCommand),
    /// Manage partner users.
    #[command(subcommand)]
    Users(UsersCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// The partners' statements.
    #[command(subcommand)]
    Remittances(RemittancesCommand),
    /// Copy a SQLite database into a new, empty PostgreSQL one (to run several nodes).
    /// Stop the server of the SQLite database first.
    CopyToPostgres {
        /// The SQLite database: `sqlite://FILE` or a file path.
        #[arg(long)]
        from: String,
        /// The PostgreSQL database (`postgres://…`); its tables must hold no rows.
        #[arg(long)]
        to: String,
        /// The SQLite server's data key (base64), if it was given one; wins over the key file.
        #[arg(long, env = "REHOME_DATA_KEY", hide_env_values = true)]
        data_key: Option<String>,
        /// The SQLite server's data key file; default `rehome.key` beside the SQLite file.
        #[arg(long, env = "REHOME_DATA_KEY_FILE")]
        data_key_file: Option<PathBuf>,
    },
    /// Write a consistent copy of the SQLite database to a new file, while the server runs
    /// and writes. The copy does not hold the data key: it prints where the key is, to keep
    /// with the copy. On PostgreSQL use pg_dump.
    Backup {
        /// The new file; an existing one is never overwritten.
        #[arg(long)]
        to: PathBuf,
        /// The server's data key (base64), if it was given one (only to say where it is).
        #[arg(long, env = "REHOME_DATA_KEY", hide_env_values = true)]
        data_key: Option<String>,
        /// The server's data key file; default `rehome.key` beside the SQLite file.
        #[arg(long, env = "REHOME_DATA_KEY_FILE")]
        data_key_file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum BrandsCommand {
    /// Create a brand (partner workspace).
    Create {
        /// URL-safe identifier, shown as `brand_id` in the API.
        slug: String,
        #[arg(long)]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Create a user; prints the new user's id on the last line.
    Create {
        #[arg(long)]
        brand: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "admin")]
        role: Role,
    },
    /// List a brand's users, removed ones included: a header line, then one tab-separated
    /// line per user (id, email, name, role, status).
    List {
        #[arg(long)]
        brand: String,
    },
    /// Print a fresh invitation link for a user, alone on the last line: opening it lets
    /// them set a (new) password. Earlier unused links of the user stop working. Not mailed.
    InviteLink {
        user_id: i64,
        /// Base URL of the server (the link's start); default: the one the server last
        /// started on this database recorded.
        #[arg(long, env = "REHOME_PUBLIC_URL")]
        public_url: Option<String>,
    },
    /// Set a user's password, read from standard input (one line; 12 to 128 characters, not only spaces).
    /// Ends all of that user's dashboard sessions.
    SetPassword { user_id: i64 },
}

#[derive(Debug, Subcommand)]
pub enum RemittancesCommand {
    /// Issue now, per brand, one statement of every entry available and not yet paid (what
    /// the monthly run does on the 1st); prints one line per statement issued. Running it
    /// again issues nothing new. With mail configured, the statements are queued for the
    /// server's mail worker to send.
    Run {
        /// Pay the entries available at this instant (RFC 3339, not in the future); default now.
        #[arg(long)]
        as_of: Option<DateTime<Utc>>,
        /// The server's SMTP URL: when set (with the sender), statements are mailed.
        #[arg(long, env = "REHOME_SMTP_URL", hide_env_values = true, hide = true)]
        smtp_url: Option<String>,
        #[arg(long, env = "REHOME_MAIL_FROM", hide = true)]
        mail_from: Option<String>,
        /// The server's data key (mail is queued sealed with it), as `serve` takes it.
        #[arg(long, env = "REHOME_DATA_KEY", hide_env_values = true, hide = true)]
        data_key: Option<String>,
        #[arg(long, env = "REHOME_DATA_KEY_FILE", hide = true)]
        data_key_file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key; prints `key_id: <ID>` and then the secret alone on the last line.
    Create {
        #[arg(long)]
        user: i64,
        #[arg(long, default_value = "read,write")]
        scopes: Scopes,
        /// RFC 3339 time after which the key stops working.
        #[arg(long)]
        expires_at: Option<DateTime<Utc>>,
        /// Requests per minute for this key (contract tier); default the server's.
        #[arg(long)]
        rate_limit: Option<u32>,
        /// What the key is for, shown in the key list (at most 100 characters).
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List a brand's keys, newest first, revoked ones included: a header line, then one
    /// tab-separated line per key (id, prefix, label, user id, scopes, created, expires,
    /// last used, revoked; `-` for none).
    List {
        #[arg(long)]
        brand: String,
    },
    /// Revoke a key; running servers stop accepting it within about a second.
    Revoke { key_id: i64 },
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    limit_sqlite_memory(cli.sqlite_memory_mib);
    match cli.command {
        Command::Serve { config, demo, demo_reset } => {
            let _log = logging::init(config.log_format);
            let demo = demo.then_some(if demo_reset { Demo::Reset } else { Demo::Reuse });
            serve(&cli.database_url, *config, demo).await
        }
        Command::CopyToPostgres { from, to, data_key, data_key_file } => {
            let _log = logging::init(LogFormat::Text);
            copy_to_postgres(&from, &to, data_key.as_deref(), data_key_file.as_deref()).await
        }
        Command::Backup { to, data_key, data_key_file } => {
            let _log = logging::init(LogFormat::Text);
            backup(&cli.database_url, &to, data_key.is_some(), data_key_file.as_deref()).await
        }
        other => {
            let _log = logging::init(LogFormat::Text);
            // No admin command writes an event; only a remittance run that mails its
            // statements needs the data key (mail is queued sealed).
            let sealer = match &other {
                Command::Remittances(RemittancesCommand::Run {
                    smtp_url: Some(_),
                    mail_from: Some(_),
                    data_key,
                    data_key_file,
                    ..
                }) => Some(
                    Sealer::load(data_key.as_deref(), data_key_file.as_deref(), &cli.database_url)
                        .context("loading the data key (statements are queued sealed with it)")?,
                ),
                _ => None,
            };
            let store = Store::open(&cli.database_url, sealer).await?;
            let result = admin(&store, other).await;
            store.close().await;
            result
        }
    }
}

/// What `serve --demo` does with an existing demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Demo {
    Reuse,
    Reset,
}

async fn serve(database_url: &str, config: Config, demo: Option<Demo>) -> anyhow::Result<()> {
    let sealer =
        Sealer::load(config.data_key.as_ref().map(Secret::expose), config.data_key_file.as_deref(), database_url)
            .context("loading the data key")?;
    let store = Store::open(database_url, Some(sealer)).await?;
    let server = Server::bind(config, store.clone()).await?;
    let addr = server.local_addr();
    if let Some(demo) = demo {
        let access = accounts::demo_access(&store, demo == Demo::Reset).await.context("seeding the demo brand")?;
        crate::usecases::demo::sample_data(&server.state().core, &access.admin)
            .await
            .context("seeding the demo's sample data")?;
        match access.credentials {
            Some((key, password)) => {
                println!("Demo brand '{}' is ready. Its admin's API key (shown once):", accounts::DEMO_BRAND);
                println!();
                println!("    {}", key.secret);
                println!();
                println!("Try it:");
                println!();
                println!("    curl -s -H 'Authorization: Bearer {}' http://{addr}/v1/listings/options", key.secret);
                println!();
                println!("API docs: http://{addr}/docs");
                println!();
                println!("Marketplace: http://{addr}/marketplace  (the storefront buyers see)");
                println!();
                println!("Dashboard: http://{addr}/dashboard  (sign in as {}, password {password})", access.email);
            }
            None => {
                println!("Demo brand '{}' exists already and was left as it was.", accounts::DEMO_BRAND);
                println!("Lost the password or the key? Run `rehome serve --demo --demo-reset` for new ones.");
                println!();
                println!("API docs: http://{addr}/docs");
                println!();
                println!("Marketplace: http://{addr}/marketplace  (the storefront buyers see)");
                println!();
                // The dashboard line is the last, as on a new demo: a reader may stop there.
                println!(
                    "Dashboard: http://{addr}/dashboard  (sign in as {} with the password printed when the demo \
                     was made)",
                    access.email
                );
            }
        }
    }
    if let Some(addr) = server.metrics_addr() {
        tracing::info!(%addr, "rehome metrics listening");
    }
    tracing::info!(%addr, "rehome listening");
    crate::residency::spawn_release();
    server.run_until(shutdown_signal()).await
}

async fn admin(store: &Store, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Brands(BrandsCommand::Create { slug, name }) => {
            let brand = accounts::create_brand(store, &slug, &name).await?;
            println!("created brand {} ({})", brand.slug, brand.name);
        }
        Command::Users(UsersCommand::Create { brand, name, email, role }) => {
            let user = accounts::create_user(store, &brand, &name, &email, role).await?;
            println!("created {} user {} <{}> in brand {brand}", role, user.name, user.email);
            println!("{}", user.id);
        }
        Command::Users(UsersCommand::SetPassword { user_id }) => {
            let password = read_password_from_stdin()?;
            passwords::set_password(store, user_id, &password).await?;
            println!("password set for user {user_id}; their sessions were signed out");
        }
        Command::Users(UsersCommand::List { brand }) => {
            println!("id\temail\tname\trole\tstatus");
            for user in accounts::list_users(store, &brand).await? {
                let fields = [user.id.to_string(), user.email, user.name, user.role, user.status];
                println!("{}", tab_separated(&fields));
            }
        }
        Command::Users(UsersCommand::InviteLink { user_id, public_url }) => {
            let base = match public_url {
                Some(url) => url,
                None => store.recorded_public_url().await?.context(
                    "no public URL: pass --public-url (or set REHOME_PUBLIC_URL) to the address partners open the \
                     dashboard at; no server has run on this database yet to record its own",
                )?,
            };
            let invitation = invitations::issue_link(store, &base, user_id).await?;
            println!("invitation for user {user_id}, single use, valid until {}:", invitation.expires_at);
            println!("{}", invitation.url);
        }
        Command::Keys(KeysCommand::List { brand }) => {
            println!("id\tprefix\tlabel\tuser_id\tscopes\tcreated\texpires\tlast_used\trevoked");
            let or_dash = |t: Option<Ts>| t.map_or_else(|| "-".to_owned(), |t| t.to_string());
            for key in accounts::list_keys(store, &brand).await? {
                let fields = [
                    key.id.to_string(),
                    key_prefix(&key.lookup),
                    if key.label.is_empty() { "-".to_owned() } else { key.label },
                    key.user_id.to_string(),
                    key.scopes,
                    key.created_at.to_string(),
                    or_dash(key.expires_at),
                    or_dash(key.last_used_at),
                    or_dash(key.revoked_at),
                ];
                println!("{}", tab_separated(&fields));
            }
        }
        Command::Keys(KeysCommand::Create { user, scopes, expires_at, rate_limit, label }) => {
            let key = accounts::create_labelled_key(store, user, &label, scopes, expires_at, rate_limit).await?;
            println!("key_id: {}", key.key_id);
            println!("scopes: {scopes}");
            println!("The secret is shown once; store it now:");
            println!("{}", key.secret);
        }
        Command::Keys(KeysCommand::Revoke { key_id }) => {
            accounts::revoke_key(store, key_id).await?;
            println!("revoked key {key_id}");
        }
        Command::Remittances(RemittancesCommand::Run { as_of, smtp_url, mail_from, .. }) => {
            let now = Utc::now();
            let as_of = as_of.unwrap_or(now);
            if as_of > now {
                bail!("--as-of must not be in the future");
            }
            // The statements' mail goes from the serving nodes' outbox, at their next poll:
            // there is no worker here to wake.
            let mail = smtp_url.is_some_and(|u| !u.is_empty()) && mail_from.is_some_and(|f| !f.is_empty());
            let nobody = crate::jobs::MailJobs::default();
            let issued = wallet::run(store, as_of, mail.then_some(&nobody)).await?;
            println!("issued {} statement(s) as of {}", issued.len(), Ts::from(as_of));
            for r in issued {
                println!(
                    "{}\t{}\t{}\t{} lines\t{} GBP",
                    r.id,
                    r.brand_slug,
                    r.number,
                    r.line_count,
                    pounds(r.amount_pence)
                );
            }
        }
        Command::Serve { .. } | Command::CopyToPostgres { .. } | Command::Backup { .. } => {
            unreachable!("handled by run")
        }
    }
    Ok(())
}

/// One line of a listing: the fields joined by tabs, with any tab or line break inside a
/// field turned into a space so that every record stays one line of the same columns.
fn tab_separated(fields: &[String]) -> String {
    let clean: Vec<String> = fields.iter().map(|f| f.replace(['\t', '\n', '\r'], " ")).collect();
    clean.join("\t")
}

/// The first line of standard input, without its line ending (a password may hold spaces).
fn read_password_from_stdin() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).context("reading the password from standard input")?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    Ok(password.strip_suffix('\r').unwrap_or(password).to_owned())
}

/// Copies the SQLite database `from` into the empty PostgreSQL database `to`, with the
/// SQLite server's data key (which must already exist: a new key would open nothing).
async fn copy_to_postgres(
    from: &str,
    to: &str,
    data_key: Option<&str>,
    data_key_file: Option<&Path>,
) -> anyhow::Result<()> {
    if is_postgres_url(from) {
        bail!("--from must name a SQLite database, not {from}");
    }
    if !is_postgres_url(to) {
        bail!("--to must be a PostgreSQL URL (postgres://…)");
    }
    let file = sqlite_file(from).with_context(|| format!("--from must name a SQLite file, not {from}"))?;
    if !file.is_file() {
        bail!("no SQLite database at {}", file.display());
    }
    let key_file = data_key_file.map_or_else(|| default_key_path(from), Path::to_path_buf);
    if data_key.is_none() && !key_file.is_file() {
        bail!(
            "no data key file at {} (`rehome serve` makes it beside the database): give the SQLite \
             server's key with --data-key-file or --data-key",
            key_file.display()
        );
    }
    let sealer = Sealer::load(data_key, Some(&key_file), from).context("loading the data key")?;
    let source = SqliteStore::open(from, Some(sealer.clone())).await.context("opening the SQLite database")?;
    let target = match PostgresStore::open(to, Some(sealer)).await.context("opening the PostgreSQL database") {
        Ok(target) => target,
        Err(e) => {
            source.close().await;
            return Err(e);
        }
    };
    let copied = copy_sqlite_to_postgres(&source, &target).await;
    source.close().await;
    target.close().await;
    let copied = copied?;
    let width = copied.iter().map(|t| t.table.len()).max().unwrap_or(0);
    for table in &copied {
        println!("{:<width$}  {:>9} rows", table.table, table.rows);
    }
    println!("copied {} rows in {} tables", copied.iter().map(|t| t.rows).sum::<u64>(), copied.len());
    println!();
    println!("Stored event bodies and credit codes stay sealed under this server's data key.");
    println!("Give every PostgreSQL node the same key, or they cannot read them:");
    match data_key {
        Some(_) => println!("    the REHOME_DATA_KEY this copy used"),
        None => println!(
            "    REHOME_DATA_KEY_FILE={} (a copy of that file on each node), or REHOME_DATA_KEY=<its base64>",
            key_file.display()
        ),
    }
    println!("Photo files are not in the database: move the media directory to the nodes' media store too.");
    Ok(())
}

/// Copies the SQLite database of `database_url` to the new file `to` (decisions 13.3), and
/// says where the data key the copy needs is.
async fn backup(database_url: &str, to: &Path, key_given: bool, key_file: Option<&Path>) -> anyhow::Result<()> {
    if is_postgres_url(database_url) {
        bail!(
            "rehome backup copies SQLite databases; back up PostgreSQL with pg_dump, e.g. \
             pg_dump --format=custom --file=rehome.dump \"$REHOME_DATABASE_URL\" (docs/deployment.md)"
        );
    }
    let file = sqlite_file(database_url).context("an in-memory database cannot be backed up")?;
    if !file.is_file() {
        bail!("no SQLite database at {}", file.display());
    }
    if to.exists() {
        bail!("{} already exists: give a new file (a backup never overwrites)", to.display());
    }
    let store = SqliteStore::open(database_url, None).await.context("opening the database")?;
    let copied = store.backup(to).await;
    store.close().await;
    copied.with_context(|| format!("writing the backup to {}", to.display()))?;
    let size = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    println!("backed up {} to {} ({size} bytes)", file.display(), to.display());
    println!();
    println!("The copy does not hold the data key, and its webhook secrets, event bodies and credit");
    println!("codes open only with it. Keep the key with the copy (apart from it, and safely):");
    if key_given {
        println!("    the REHOME_DATA_KEY the server runs with");
    } else {
        let key_file = key_file.map_or_else(|| default_key_path(database_url), Path::to_path_buf);
        println!("    the data key file {}", key_file.display());
    }
    println!("To restore: stop the server, put the copy in place of the database (and drop any");
    println!("-wal and -shm files beside the old one), and start it with the same data key.");
    Ok(())
}

/// The file of a SQLite URL (`sqlite://FILE`, `sqlite:FILE` or a bare path); `None` for an
/// in-memory database.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
    let file = rest.split_once('?').map_or(rest, |(file, _)| file);
    let file = file.strip_prefix("file:").unwrap_or(file);
    (!file.is_empty() && file != ":memory:").then(|| PathBuf::from(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_lines_keep_one_record_per_line_and_one_field_per_column() {
        let fields = ["7".to_owned(), "a\tb".to_owned(), "line\nbreak".to_owned()];
        assert_eq!(tab_separated(&fields), "7\ta b\tline break");
    }

    #[test]
    fn sqlite_memory_is_a_number_of_mib_within_bounds_for_every_command() {
        use clap::Parser;
        let parse = |args: &[&str]| Cli::try_parse_from(args).map(|cli| cli.sqlite_memory_mib);
        assert_eq!(parse(&["rehome", "keys", "revoke", "1"]).unwrap(), DEFAULT_SQLITE_MEMORY_MIB);
        assert_eq!(parse(&["rehome", "keys", "revoke", "1", "--sqlite-memory-mib", "0"]).unwrap(), 0);
        assert_eq!(parse(&["rehome", "--sqlite-memory-mib", "64", "keys", "revoke", "1"]).unwrap(), 64);
        for refused in ["-1", "1048577", "8MB", ""] {
            assert!(parse(&["rehome", "--sqlite-memory-mib", refused, "keys", "revoke", "1"]).is_err(), "{refused}");
        }
    }
}
