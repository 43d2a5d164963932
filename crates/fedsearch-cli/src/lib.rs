//! The fedsearch command line: ask a running router your own questions, as yourself.
//!
//! `fedsearch token` mints a development token; `search`, `sources` and `get` call the router's
//! public API (`fedsearch.v1.FederatedSearch`) with `authorization: Bearer <token>`.
//! [`cli`] parses, [`request`] builds the search request, [`client`] talks to the router,
//! [`render`] formats text and [`json`] formats `--json` output. The token is never printed,
//! except by `fedsearch token`, whose whole output it is.

pub mod cli;
pub mod client;
pub mod doctor;
pub mod eval;
pub mod json;
pub mod presets;
pub mod render;
pub mod request;

use std::{
    io::Write as _,
    process::ExitCode,
    time::{Duration, SystemTime},
};

use fedsearch_proto::api::{GetDocumentRequest, ListSourcesRequest, search_event::Event};
use tonic::Request;

use cli::{Cli, Command, GetArgs, SearchArgs, TokenArgs};
use client::{BearerAuth, Client, Failure};

/// The gRPC deadline when `--timeout` is not given.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);
/// Extra time the client waits beyond `--timeout`, so the router can answer with partial results.
const DEADLINE_SLACK: Duration = Duration::from_secs(2);

/// Runs one command; prints errors as one line on stderr and returns the exit code.
pub async fn main(cli: Cli) -> ExitCode {
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{}", failure.line());
            failure.exit_code()
        }
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    if let Command::Token(args) = &cli.command {
        return token(args);
    }
    if let Command::Eval(args) = &cli.command {
        return eval::run(&cli.router, args, cli.json).await;
    }
    if let Command::Doctor(args) = &cli.command {
        let clean = doctor::run(&args.config, cli.token.as_deref(), &args.probe, &args.sources).await?;
        return if clean { Ok(()) } else { Err(Failure::Other("doctor found problems (the FAIL lines above)".into())) };
    }
    if let Command::Weights(args) = &cli.command {
        let text = std::fs::read_to_string(&args.feedback)
            .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", args.feedback.display())))?;
        let rows = eval::report::weights_from_feedback(&text).map_err(Failure::Usage)?;
        out(&eval::report::weights_text(&rows));
        return Ok(());
    }
    let client = client::connect(&cli.router, BearerAuth::new(cli.token.as_deref())?)?;
    let result = match &cli.command {
        Command::Token(_) | Command::Eval(_) | Command::Weights(_) | Command::Doctor(_) => Ok(()),
        Command::Search(args) if args.stream => search_stream(client, args, cli.json).await,
        Command::Search(args) => search(client, args, cli.json).await,
        Command::Sources => sources(client, cli.json).await,
        Command::Get(args) => get(client, args, cli.json).await,
    };
    result.map_err(|f| f.with_router(&cli.router))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a panic.
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

fn out_json(value: &serde_json::Value, pretty: bool) {
    let text = if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) };
    out(&format!("{}\n", text.unwrap_or_default()));
}

fn token(args: &TokenArgs) -> Result<(), Failure> {
    use fedsearch_core::auth::MIN_SECRET_LEN;
    if args.secret.len() < MIN_SECRET_LEN {
        return Err(Failure::Usage(format!(
            "--secret must be at least {MIN_SECRET_LEN} bytes (the router rejects shorter HS256 secrets)"
        )));
    }
    let (sub, groups, attrs) = match &args.user {
        Some(name) => {
            let user = presets::demo_user(name).map_err(Failure::Usage)?;
            (user.sub.to_string(), user.groups(), user.attrs())
        }
        None => {
            let sub = args.sub.clone().unwrap_or_default();
            if sub.trim().is_empty() {
                return Err(Failure::Usage("--sub must not be empty".into()));
            }
            (sub, args.group.clone(), args.attr.iter().cloned().collect())
        }
    };
    let token =
        fedsearch_core::auth::mint_hs256(&args.secret, &sub, &groups, attrs, args.ttl).map_err(Failure::Other)?;
    out(&format!("{token}\n"));
    Ok(())
}

fn search_call(args: &SearchArgs) -> Request<fedsearch_proto::api::SearchRequest> {
    let mut req = Request::new(request::search_request(args, SystemTime::now()));
    req.set_timeout(args.timeout.map_or(DEFAULT_DEADLINE, |t| t + DEADLINE_SLACK));
    req
}

async fn search(mut client: Client, args: &SearchArgs, json: bool) -> Result<(), Failure> {
    let response = client.search(search_call(args)).await?.into_inner();
    if json {
        out_json(&json::search_response(&response), true);
    } else {
        out(&render::search_response(&response, args.explain));
    }
    Ok(())
}

async fn search_stream(mut client: Client, args: &SearchArgs, json: bool) -> Result<(), Failure> {
    let mut stream = client.search_stream(search_call(args)).await?.into_inner();
    let mut statuses_seen = false;
    while let Some(event) = stream.message().await? {
        if json {
            out_json(&json::search_event(&event), false);
            if matches!(event.event, Some(Event::Result(_))) {
                return Ok(());
            }
            continue;
        }
        match &event.event {
            Some(Event::Routing(r)) => out(&format!("{}\n", render::routing(r))),
            Some(Event::SourceStatus(s)) => {
                if !statuses_seen {
                    out("sources:\n");
                    statuses_seen = true;
                }
                out(&render::status_line(s));
            }
            Some(Event::Snapshot(s)) => out(&render::snapshot(s)),
            Some(Event::Result(r)) => {
                out(&render::search_result(r, args.explain));
                return Ok(());
            }
            None => {}
        }
    }
    Err(Failure::Other("the stream ended before the final result".into()))
}

async fn sources(mut client: Client, json: bool) -> Result<(), Failure> {
    let mut req = Request::new(ListSourcesRequest {});
    req.set_timeout(DEFAULT_DEADLINE);
    let list = client.list_sources(req).await?.into_inner().sources;
    if json {
        out_json(&json::sources(&list), true);
    } else {
        out(&render::sources(&list));
    }
    Ok(())
}

async fn get(mut client: Client, args: &GetArgs, json: bool) -> Result<(), Failure> {
    let mut req = Request::new(GetDocumentRequest {
        full_text_ref: args.full_text_ref.clone(),
        source_credentials: Default::default(),
    });
    req.set_timeout(DEFAULT_DEADLINE);
    let doc = client.get_document(req).await?.into_inner();
    if json {
        out_json(&json::document(&doc), true);
    } else {
        out(&render::document(&doc));
    }
    Ok(())
}
