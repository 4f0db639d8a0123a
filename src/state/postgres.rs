//! The PostgreSQL state backend (tokio-postgres; TLS per the URL's
//! `sslmode`, see [`super::pg_tls`]).
//!
//! Tables live in one schema (default `gpuform`), created on first use and
//! upgraded by numbered migrations (`<schema>.migrations` records what ran),
//! under a transaction-level advisory lock so two first users cannot race:
//!
//! - `states(name, lineage, serial, doc)`: one row per project/workspace;
//!   every write is a compare-and-swap on the serial last read or written.
//! - `locks(name, lock_id, info, expires_at, generation)`: the lock. Taking
//!   it bumps `generation`; a live holder renews `expires_at` in the
//!   background; a holder whose session is gone (it also holds a session
//!   advisory lock, freed by the server when its connection dies) or whose
//!   lease expired is taken over without `force-unlock`.
//! - `journal(name, seq, generation, line)`: an apply's journal, one INSERT
//!   per group-committed batch. Every write (journal batch, state) checks,
//!   in the same statement or transaction, that the lock still carries this
//!   run's id and generation: a holder paused past its lease and taken over
//!   is refused when it resumes.
//!
//! Credentials: the URL, else `PGPASSWORD`, else `~/.pgpass` (`PGPASSFILE`);
//! `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE` fill what the URL leaves out.
//! The password never appears in a message: locations are redacted URLs and
//! client errors are scrubbed of it.

use super::backend::{
    redact_url, scrub, with_timeout, HeldLock, JournalMirror, Remote, RemoteInner, Runtime,
    StateBackend,
};
use super::lease::Renewal;
use super::lock::new_info;
use super::{LockInfo, StateDoc, StateError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, NoTls, Socket};

/// The schema's migrations, in order; `{s}` is the schema name. Never edit
/// one that has shipped: add the next.
const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    "CREATE TABLE {s}.states (
         name text PRIMARY KEY,
         lineage text NOT NULL,
         serial bigint NOT NULL,
         doc bytea NOT NULL,
         updated_at timestamptz NOT NULL DEFAULT now());
     CREATE TABLE {s}.locks (
         name text PRIMARY KEY,
         lock_id text,
         info jsonb,
         expires_at timestamptz,
         generation bigint NOT NULL DEFAULT 0);
     CREATE TABLE {s}.journal (
         name text NOT NULL,
         seq bigserial,
         generation bigint NOT NULL,
         line text NOT NULL,
         PRIMARY KEY (name, seq));",
)];

/// How long one database round trip may take before the backend counts as
/// unreachable.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

struct Inner {
    location: String,
    password: Option<String>,
    config: Config,
    /// `None`: `sslmode=disable`.
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    schema: String,
    name: String,
    lease: Duration,
    client: tokio::sync::Mutex<Option<Client>>,
    /// The serial last read or written (`None`: no row seen): the CAS base.
    last_serial: Mutex<Option<u64>>,
    /// The lock this process holds: (lock id, generation).
    held: Mutex<Option<(String, i64)>>,
    fenced: AtomicBool,
    journal_path: String,
}

/// A state in PostgreSQL, keyed by `name` (project, or `project/workspace`).
pub struct PgBackend {
    remote: Remote<Inner>,
}

impl std::fmt::Debug for PgBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PgBackend({} {})",
            self.remote.inner.location, self.remote.inner.name
        )
    }
}

impl PgBackend {
    /// Prepares the backend; nothing is contacted until the first call.
    pub fn new(
        url: &str,
        schema: &str,
        name: &str,
        lease: Duration,
        journal_path: &std::path::Path,
    ) -> Result<PgBackend, StateError> {
        let location = redact_url(url);
        let bad = |message: String| {
            StateError::Backend {
            location: location.clone(),
            message,
            hint: "use postgres://[user@]host[:port]/database[?sslmode=disable|prefer|require|verify-ca|verify-full]; put the password in PGPASSWORD or ~/.pgpass, not in the URL".into(),
        }
        };
        let (plain_url, ssl_mode, root) = super::pg_tls::split_tls(url).map_err(&bad)?;
        let mut config: Config = plain_url.parse().map_err(|e: tokio_postgres::Error| {
            bad(format!(
                "not a valid PostgreSQL URL: {}",
                redact_url(&e.to_string())
            ))
        })?;
        fill_from_env(&mut config);
        if config.get_hosts().is_empty() {
            return Err(bad("the URL names no host (and PGHOST is not set)".into()));
        }
        config.ssl_mode(ssl_mode.for_client());
        let tls = super::pg_tls::connector(ssl_mode, root.as_deref()).map_err(&bad)?;
        config.connect_timeout(Duration::from_secs(5));
        config.application_name("gpuform");
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        let rt = Runtime::start("gpuform-pg")
            .map_err(|e| bad(format!("cannot start its I/O runtime: {e}")))?;
        Ok(PgBackend {
            remote: Remote::new(
                Inner {
                    location,
                    password,
                    config,
                    tls,
                    schema: schema.to_string(),
                    name: name.to_string(),
                    lease,
                    client: tokio::sync::Mutex::new(None),
                    last_serial: Mutex::new(None),
                    held: Mutex::new(None),
                    fenced: AtomicBool::new(false),
                    journal_path: journal_path.display().to_string(),
                },
                rt,
            ),
        })
    }
}

fn fill_from_env(config: &mut Config) {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if config.get_hosts().is_empty() {
        if let Some(h) = env("PGHOST") {
            config.host(&h);
        }
    }
    if config.get_ports().is_empty() {
        if let Some(p) = env("PGPORT").and_then(|p| p.parse().ok()) {
            config.port(p);
        }
    }
    if config.get_user().is_none() {
        if let Some(u) = env("PGUSER").or_else(|| env("USER")) {
            config.user(&u);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(d) = env("PGDATABASE") {
            config.dbname(&d);
        }
    }
    if config.get_password().is_none() {
        if let Some(p) = env("PGPASSWORD").or_else(|| pgpass(config)) {
            config.password(p);
        }
    }
}

/// The first matching line of `~/.pgpass` (`host:port:db:user:password`,
/// `*` matches anything, `\:` is a colon).
fn pgpass(config: &Config) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")))?;
    let text = std::fs::read_to_string(path).ok()?;
    let host = match config.get_hosts().first()? {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or("").to_string();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => cur.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        fields.push(cur);
        if fields.len() != 5 {
            continue;
        }
        let ok = |pat: &str, v: &str| pat == "*" || pat == v;
        if ok(&fields[0], &host)
            && ok(&fields[1], &port)
            && ok(&fields[2], &db)
            && ok(&fields[3], &user)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

impl RemoteInner for Inner {
    const CALL_TIMEOUT: Duration = CALL_TIMEOUT;
    const UNREACHABLE_HINT: &'static str =
        "is the database running and reachable? Results of a running apply are kept in its local journal";

    fn location(&self) -> &str {
        &self.location
    }

    fn lease(&self) -> Duration {
        self.lease
    }
}

impl Inner {
    fn err(&self, e: &tokio_postgres::Error) -> StateError {
        let mut message = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.severity(), db.message()),
            None => {
                let mut m = e.to_string();
                let mut src = std::error::Error::source(e);
                while let Some(s) = src {
                    m.push_str(&format!(": {s}"));
                    src = s.source();
                }
                m
            }
        };
        message = scrub(&message, self.password.as_deref());
        let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
        let user = self.config.get_user().unwrap_or("?");
        let hint = match code.as_str() {
            "28P01" | "28000" => format!("check the password of user `{user}` in PGPASSWORD or ~/.pgpass (it is never read from state or logs)"),
            "3D000" => "create the database first (createdb NAME), or fix the database name in the URL".into(),
            "42501" => format!("user `{user}` needs CREATE on the database (for the schema `{}`) or USAGE on it", self.schema),
            _ if message.contains("does not support TLS") => "the server does not accept TLS connections: turn `ssl` on in its postgresql.conf, or use sslmode=prefer (TLS when offered) or sslmode=disable in the URL".into(),
            _ if message.contains("certificate") => "the server's certificate did not verify: give its CA with sslrootcert=PATH in the URL (or ~/.postgresql/root.crt), check the host name (verify-full), or use sslmode=require for encryption without verification".into(),
            _ if e.as_db_error().is_none() => "is the database running and reachable at that host and port? Results of a running apply are kept in its local journal".into(),
            _ => "see the database server's log".into(),
        };
        StateError::Backend {
            location: self.location.clone(),
            message,
            hint,
        }
    }

    fn q(&self, sql: &str) -> String {
        sql.replace("{s}", &self.schema)
    }

    /// The session, connected (and the schema migrated) on first use.
    async fn client(
        self: &Arc<Self>,
    ) -> Result<tokio::sync::MutexGuard<'_, Option<Client>>, StateError> {
        let mut guard = self.client.lock().await;
        let dead = guard.as_ref().map(|c| c.is_closed()).unwrap_or(true);
        if dead {
            let client = match &self.tls {
                None => self.connect(NoTls).await?,
                Some(tls) => self.connect(tls.clone()).await?,
            };
            *guard = Some(client);
            self.migrate(guard.as_mut().expect("just set")).await?;
        }
        Ok(guard)
    }

    /// A new session over `tls`, its connection driven on a task of its own.
    async fn connect<T>(&self, tls: T) -> Result<Client, StateError>
    where
        T: MakeTlsConnect<Socket>,
        T::Stream: Send + 'static,
    {
        let (client, conn) = tokio::time::timeout(CALL_TIMEOUT, self.config.connect(tls))
            .await
            .map_err(|_| self.timeout())?
            .map_err(|e| self.err(&e))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }

    async fn migrate(&self, client: &mut Client) -> Result<(), StateError> {
        let e = |err: tokio_postgres::Error| self.err(&err);
        let tx = client.transaction().await.map_err(e)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('gpuform-migrate', 0))",
            &[],
        )
        .await
        .map_err(e)?;
        tx.batch_execute(&self.q("CREATE SCHEMA IF NOT EXISTS {s};
             CREATE TABLE IF NOT EXISTS {s}.migrations (
                 version int PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now());"))
            .await
            .map_err(e)?;
        let done: Option<i32> = tx
            .query_one(&self.q("SELECT max(version) FROM {s}.migrations"), &[])
            .await
            .map_err(e)?
            .get(0);
        let done = done.unwrap_or(0);
        let newest = MIGRATIONS.last().map(|m| m.0).unwrap_or(0);
        if done > newest {
            return Err(StateError::Backend {
                location: self.location.clone(),
                message: format!("schema `{}` is at version {done}, newer than this gpuform understands ({newest})", self.schema),
                hint: "upgrade gpuform".into(),
            });
        }
        for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > done) {
            tx.batch_execute(&self.q(sql)).await.map_err(e)?;
            tx.execute(
                &self.q("INSERT INTO {s}.migrations (version) VALUES ($1)"),
                &[version],
            )
            .await
            .map_err(e)?;
        }
        tx.commit().await.map_err(e)
    }

    fn lock_key(&self) -> String {
        format!("gpuform-state/{}/{}", self.schema, self.name)
    }

    fn held(&self) -> Option<(String, i64)> {
        self.held.lock().expect("held").clone()
    }

    fn fenced_error(&self, generation: i64, holder: Option<LockInfo>) -> StateError {
        self.fenced.store(true, Ordering::SeqCst);
        StateError::Fenced {
            location: self.location.clone(),
            generation: generation as u64,
            holder: holder
                .map(|h| h.describe())
                .unwrap_or_else(|| "nobody (it was force-unlocked)".into()),
            journal: self.journal_path.clone(),
        }
    }
}

/// Reads the lock row's holder (its lease and generation filled in).
async fn read_holder(
    inner: &Inner,
    client: &impl tokio_postgres::GenericClient,
) -> Result<Option<LockInfo>, StateError> {
    let row = client
        .query_opt(
            &inner.q("SELECT info::text, to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), generation FROM {s}.locks WHERE name = $1 AND lock_id IS NOT NULL"),
            &[&inner.name],
        )
        .await
        .map_err(|e| inner.err(&e))?;
    Ok(row.and_then(|r| {
        let text: Option<String> = r.get(0);
        let mut info: LockInfo = serde_json::from_str(&text?).ok()?;
        info.expires = r.get(1);
        info.generation = Some(r.get::<_, i64>(2) as u64);
        Some(info)
    }))
}

impl StateBackend for PgBackend {
    fn location(&self) -> String {
        format!(
            "{} (schema {}, state {})",
            self.remote.inner.location, self.remote.inner.schema, self.remote.inner.name
        )
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn load(&self) -> Result<Option<StateDoc>, StateError> {
        self.remote.run(|inner| async move {
            let guard = inner.client().await?;
            let client = guard.as_ref().expect("connected");
            let row = client
                .query_opt(
                    &inner.q("SELECT serial, doc FROM {s}.states WHERE name = $1"),
                    &[&inner.name],
                )
                .await
                .map_err(|e| inner.err(&e))?;
            let Some(row) = row else {
                *inner.last_serial.lock().expect("serial") = None;
                return Ok(None);
            };
            let serial: i64 = row.get(0);
            let bytes: Vec<u8> = row.get(1);
            let doc = super::store::parse(std::path::Path::new(&inner.location), &bytes)?;
            *inner.last_serial.lock().expect("serial") = Some(serial as u64);
            Ok(Some(doc))
        })
    }

    fn save(&self, doc: &StateDoc) -> Result<(), StateError> {
        let json = serde_json::to_vec(doc).expect("state serialises");
        let json = super::crypto::seal_at(&self.remote.inner.location, json)?;
        let (lineage, serial) = (doc.lineage.clone(), doc.serial as i64);
        self.remote.run(move |inner| async move {
            let Some((id, generation)) = inner.held() else {
                return Err(StateError::Backend {
                    location: inner.location.clone(),
                    message: "a write without holding the lock".into(),
                    hint: "this is a bug in gpuform".into(),
                });
            };
            let mut guard = inner.client().await?;
            let client = guard.as_mut().expect("connected");
            let e = |err: tokio_postgres::Error| inner.err(&err);
            let tx = client.transaction().await.map_err(e)?;
            let ours = tx
                .query_opt(
                    &inner.q("SELECT 1 FROM {s}.locks WHERE name = $1 AND lock_id = $2 AND generation = $3 FOR SHARE"),
                    &[&inner.name, &id, &generation],
                )
                .await
                .map_err(e)?;
            if ours.is_none() {
                let holder = read_holder(&inner, &tx).await?;
                return Err(inner.fenced_error(generation, holder));
            }
            let expected = *inner.last_serial.lock().expect("serial");
            let n = match expected {
                Some(old) => tx
                    .execute(
                        &inner.q("UPDATE {s}.states SET lineage = $2, serial = $3, doc = $4, updated_at = now() WHERE name = $1 AND serial = $5"),
                        &[&inner.name, &lineage, &serial, &json, &(old as i64)],
                    )
                    .await
                    .map_err(e)?,
                None => tx
                    .execute(
                        &inner.q("INSERT INTO {s}.states (name, lineage, serial, doc) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING"),
                        &[&inner.name, &lineage, &serial, &json],
                    )
                    .await
                    .map_err(e)?,
            };
            if n != 1 {
                let found: Option<i64> = tx
                    .query_opt(&inner.q("SELECT serial FROM {s}.states WHERE name = $1"), &[&inner.name])
                    .await
                    .map_err(e)?
                    .map(|r| r.get(0));
                return Err(StateError::Conflict {
                    location: inner.location.clone(),
                    expected: expected.map(|s| s.to_string()).unwrap_or_else(|| "none (new state)".into()),
                    found: found.map(|s| s.to_string()).unwrap_or_else(|| "none".into()),
                });
            }
            // The document now holds everything the journal had.
            tx.execute(&inner.q("DELETE FROM {s}.journal WHERE name = $1"), &[&inner.name])
                .await
                .map_err(e)?;
            tx.commit().await.map_err(e)?;
            *inner.last_serial.lock().expect("serial") = Some(serial as u64);
            Ok(())
        })
    }

    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError> {
        let info = new_info(operation);
        let info2 = info.clone();
        let (info, generation, advisory) = self.remote.run(move |inner| async move {
            let mut info = info2;
            let mut guard = inner.client().await?;
            let client = guard.as_mut().expect("connected");
            let e = |err: tokio_postgres::Error| inner.err(&err);
            let key = inner.lock_key();
            let advisory: bool = client
                .query_one("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", &[&key])
                .await
                .map_err(e)?
                .get(0);
            let tx = client.transaction().await.map_err(e)?;
            tx.execute(&inner.q("INSERT INTO {s}.locks (name) VALUES ($1) ON CONFLICT (name) DO NOTHING"), &[&inner.name])
                .await
                .map_err(e)?;
            let row = tx
                .query_one(
                    &inner.q("SELECT lock_id, coalesce(expires_at < now(), true), generation FROM {s}.locks WHERE name = $1 FOR UPDATE"),
                    &[&inner.name],
                )
                .await
                .map_err(e)?;
            let current: Option<String> = row.get(0);
            let expired: bool = row.get(1);
            let generation: i64 = row.get::<_, i64>(2) + 1;
            // Refused only while the holder is demonstrably alive: its
            // session still holds the advisory lock and its lease runs.
            if current.is_some() && !advisory && !expired {
                let holder = read_holder(&inner, &tx).await?;
                drop(tx);
                return Err(StateError::Locked {
                    path: std::path::PathBuf::from(&inner.location),
                    holder: holder.as_ref().map(|h| h.describe()).unwrap_or_else(|| "another run".into()),
                    id: holder.map(|h| h.id).unwrap_or_default(),
                });
            }
            let lease = inner.lease.as_secs_f64();
            let json = serde_json::to_string(&info).expect("lock info serialises");
            let expires: String = tx
                .query_one(
                    &inner.q("UPDATE {s}.locks SET lock_id = $2, info = $3::text::jsonb, expires_at = now() + make_interval(secs => $4), generation = $5 WHERE name = $1 RETURNING to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"),
                    &[&inner.name, &info.id, &json, &lease, &generation],
                )
                .await
                .map_err(e)?
                .get(0);
            tx.commit().await.map_err(e)?;
            info.expires = Some(expires);
            info.generation = Some(generation as u64);
            *inner.held.lock().expect("held") = Some((info.id.clone(), generation));
            inner.fenced.store(false, Ordering::SeqCst);
            Ok((info, generation, advisory))
        })?;
        let (inner, id) = (self.remote.inner.clone(), info.id.clone());
        let renew = move || {
            let (inner, id) = (inner.clone(), id.clone());
            async move { renew_lease(&inner, &id, generation).await }
        };
        let release = release(
            self.remote.inner.clone(),
            info.id.clone(),
            generation,
            advisory,
        );
        Ok(self.remote.hold(info, renew, release))
    }

    fn holder(&self) -> Option<LockInfo> {
        self.remote
            .run(|inner| async move {
                let guard = inner.client().await?;
                read_holder(&inner, guard.as_ref().expect("connected")).await
            })
            .ok()
            .flatten()
    }

    fn force_unlock(&self, id: &str) -> Result<LockInfo, StateError> {
        let id = id.to_string();
        self.remote.run(move |inner| async move {
            let guard = inner.client().await?;
            let client = guard.as_ref().expect("connected");
            let Some(holder) = read_holder(&inner, client).await? else {
                return Err(StateError::NotLocked {
                    path: std::path::PathBuf::from(&inner.location),
                });
            };
            holder.check_id(std::path::Path::new(&inner.location), &id)?;
            // Bumping the generation fences the old holder for good.
            client
                .execute(
                    &inner.q("UPDATE {s}.locks SET lock_id = NULL, info = NULL, expires_at = NULL, generation = generation + 1 WHERE name = $1 AND lock_id = $2"),
                    &[&inner.name, &id],
                )
                .await
                .map_err(|e| inner.err(&e))?;
            Ok(holder)
        })
    }

    fn recover_journal(&self, doc: &mut StateDoc) -> Result<bool, StateError> {
        let lines: Vec<String> = self.remote.run(|inner| async move {
            let guard = inner.client().await?;
            let rows = guard
                .as_ref()
                .expect("connected")
                .query(
                    &inner.q("SELECT line FROM {s}.journal WHERE name = $1 ORDER BY seq"),
                    &[&inner.name],
                )
                .await
                .map_err(|e| inner.err(&e))?;
            Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
        })?;
        if lines.is_empty() {
            return Ok(false);
        }
        let location = &self.remote.inner.location;
        let lines = lines
            .iter()
            .map(|l| super::crypto::open_line(location, l))
            .collect::<Result<Vec<String>, StateError>>()?;
        super::journal::fold_lines(&self.remote.inner.location, &lines, doc)?;
        Ok(true)
    }

    fn journal_mirror(&self) -> Option<Arc<dyn JournalMirror>> {
        Some(Arc::new(self.remote.clone()))
    }
}

impl JournalMirror for Remote<Inner> {
    fn push(&self, lines: &[String]) -> Result<(), StateError> {
        // Encrypted like the state when a key is set (one KDF per process).
        let location = &self.inner.location;
        let lines = lines
            .iter()
            .map(|l| super::crypto::seal_line(location, l))
            .collect::<Result<Vec<String>, StateError>>()?;
        self.run(move |inner| async move {
            let Some((id, generation)) = inner.held() else {
                return Err(inner.fenced_error(0, None));
            };
            let guard = inner.client().await?;
            let client = guard.as_ref().expect("connected");
            if inner.fenced.load(Ordering::SeqCst) {
                let holder = read_holder(&inner, client).await?;
                return Err(inner.fenced_error(generation, holder));
            }
            // One round trip; the lock row is share-locked in the same
            // statement, so a takeover either waits for this batch or
            // makes it insert nothing.
            let n = client
                .execute(
                    &inner.q(
                        "WITH l AS (SELECT 1 FROM {s}.locks WHERE name = $1 AND lock_id = $2 AND generation = $3 FOR SHARE)
                         INSERT INTO {s}.journal (name, generation, line)
                         SELECT $1, $3, t.line FROM l, unnest($4::text[]) WITH ORDINALITY AS t(line, n) ORDER BY t.n",
                    ),
                    &[&inner.name, &id, &generation, &lines],
                )
                .await
                .map_err(|e| inner.err(&e))?;
            if n as usize != lines.len() {
                let holder = read_holder(&inner, client).await?;
                return Err(inner.fenced_error(generation, holder));
            }
            Ok(())
        })
    }
}

/// Extends the lease while the lock still carries this run's id and
/// generation; an update of no row means it was taken over.
async fn renew_lease(inner: &Arc<Inner>, id: &String, generation: i64) -> Renewal {
    let renewed = async {
        let guard = inner.client().await?;
        guard
            .as_ref()
            .expect("connected")
            .execute(
                &inner.q("UPDATE {s}.locks SET expires_at = now() + make_interval(secs => $4) WHERE name = $1 AND lock_id = $2 AND generation = $3"),
                &[&inner.name, &id, &generation, &inner.lease.as_secs_f64()],
            )
            .await
            .map_err(|e| inner.err(&e))
    };
    match renewed.await {
        Ok(0) => {
            // Taken over: every later write of this run is refused.
            inner.fenced.store(true, Ordering::SeqCst);
            Renewal::Lost
        }
        _ => Renewal::Kept,
    }
}

/// Frees the lock row (if it is still ours) and the session's advisory lock.
async fn release(
    inner: Arc<Inner>,
    id: String,
    generation: i64,
    advisory: bool,
) -> Result<(), StateError> {
    let freed = with_timeout(&*inner, async {
        let guard = inner.client().await?;
        let client = guard.as_ref().expect("connected");
        let _ = client
            .execute(
                &inner.q("UPDATE {s}.locks SET lock_id = NULL, info = NULL, expires_at = NULL WHERE name = $1 AND lock_id = $2 AND generation = $3"),
                &[&inner.name, &id, &generation],
            )
            .await;
        if advisory {
            let _ = client
                .execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", &[&inner.lock_key()])
                .await;
        }
        Ok(())
    })
    .await;
    *inner.held.lock().expect("held") = None;
    freed
}
