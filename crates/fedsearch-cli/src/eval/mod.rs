//! `fedsearch eval`: asks a labeled question set of a running router, each question as its
//! user, and scores the answers ([`metrics`]). Prints a per-question table and a summary (or
//! JSON), compares with a baseline run, and fails when a threshold is missed or any forbidden id
//! was returned.

pub mod labels;
pub mod metrics;
pub mod report;

use std::{collections::BTreeMap, time::Duration};

use fedsearch_proto::api::{ContextOptions, GetDocumentRequest, ListSourcesRequest, SearchRequest, SearchResponse};
use tonic::Request;

use crate::{
    cli::EvalArgs,
    client::{self, BearerAuth, Client, Failure},
};
use labels::{Question, Users};
use metrics::{Answer, Scores, Shown};
use report::{QuestionResult, Summary};

/// Per-question gRPC deadline.
const DEADLINE: Duration = Duration::from_secs(30);

pub async fn run(router: &str, args: &EvalArgs, json: bool) -> Result<(), Failure> {
    let questions = labels::read_questions(&args.questions).map_err(Failure::Usage)?;
    let users = labels::read_users(&args.users).map_err(Failure::Usage)?;
    let mut clients = clients_for(router, &args.secret, &users, &questions)?;
    let mut results = Vec::with_capacity(questions.len());
    let mut dump = match &args.dump {
        Some(path) => Some(std::fs::File::create(path).map_err(|e| cannot_write(path, &e))?),
        None => None,
    };
    for q in &questions {
        let client = clients.get_mut(&q.user).expect("every user has a client");
        let (result, response) = ask(client, q, args).await?;
        if let (Some(file), Some(path)) = (dump.as_mut(), &args.dump) {
            write_answer(file, q, &response).map_err(|e| cannot_write(path, &e))?;
        }
        results.push(result);
    }
    let summary = Summary::of(&results);
    let baseline = match &args.baseline {
        Some(path) => Some(report::read_baseline(path).map_err(Failure::Usage)?),
        None => None,
    };
    let text = if json {
        report::json(&summary, &results)
    } else {
        report::text(&summary, &results, baseline.as_ref(), args.top_k)
    };
    crate::out(&text);
    if args.suggest_weights && !json {
        crate::out(&report::weights_text(&report::suggested_weights(&results)));
    }
    if let Some(path) = &args.save {
        std::fs::write(path, report::json(&summary, &results)).map_err(|e| cannot_write(path, &e))?;
    }
    report::check(&summary, args).map_err(Failure::Other)
}

fn cannot_write(path: &std::path::Path, e: &std::io::Error) -> Failure {
    Failure::Other(format!("cannot write {}: {e}", path.display()))
}

/// One line of `--dump`: the question's id and the hits it got, as `fedsearch search --json`
/// prints them.
fn write_answer(file: &mut std::fs::File, q: &Question, r: &SearchResponse) -> std::io::Result<()> {
    use std::io::Write;
    let hits: Vec<serde_json::Value> = r.hits.iter().map(crate::json::hit).collect();
    writeln!(file, "{}", serde_json::json!({ "id": q.id, "user": q.user, "hits": hits }))
}

fn clients_for(
    router: &str,
    secret: &str,
    users: &Users,
    questions: &[Question],
) -> Result<BTreeMap<String, Client>, Failure> {
    let mut out = BTreeMap::new();
    for q in questions {
        if out.contains_key(&q.user) {
            continue;
        }
        let user = users.users.get(&q.user).ok_or_else(|| {
            Failure::Usage(format!("question {} is asked by `{}`, who is not in the users file", q.id, q.user))
        })?;
        let token = fedsearch_core::auth::mint_hs256(
            secret,
            &q.user,
            &user.groups,
            user.attributes.clone(),
            Duration::from_secs(3600),
        )
        .map_err(Failure::Other)?;
        out.insert(q.user.clone(), client::connect(router, BearerAuth::new(Some(&token))?)?);
    }
    Ok(out)
}

fn request(q: &Question, args: &EvalArgs, sources: Vec<String>) -> Result<Request<SearchRequest>, Failure> {
    let as_of = match &q.as_of {
        Some(t) => {
            Some(chrono::DateTime::parse_from_rfc3339(t).map_err(|e| Failure::Usage(format!("{}: as_of: {e}", q.id)))?)
        }
        None => args.default_as_of,
    }
    .map(|t| prost_types::Timestamp { seconds: t.timestamp(), nanos: 0 });
    let mut req = Request::new(SearchRequest {
        query: q.question.clone(),
        top_k: args.top_k,
        sources,
        as_of,
        time_zone: q.time_zone.clone().unwrap_or_default(),
        context: (args.context_tokens > 0).then_some(ContextOptions { token_budget: args.context_tokens }),
        fusion: args.fusion.options(),
        // The router's longest wait (limits.max_timeout caps it): a slow machine should not
        // turn into a quality loss.
        timeout: Some(prost_types::Duration { seconds: 10, nanos: 0 }),
        ..Default::default()
    });
    req.set_timeout(DEADLINE);
    Ok(req)
}

async fn ask(client: &mut Client, q: &Question, args: &EvalArgs) -> Result<(QuestionResult, SearchResponse), Failure> {
    let sources = if args.all_sources {
        client.list_sources(ListSourcesRequest {}).await?.into_inner().sources.into_iter().map(|s| s.name).collect()
    } else {
        Vec::new()
    };
    // Quality, not speed, is measured: an answer in which a source ran out of time (a busy
    // machine), or a router that could not be reached, is asked again, up to twice; the last
    // answer counts either way. Any other error ends the run: a question the router refuses is
    // a broken label set or a broken router, not a score.
    let mut attempt = 0;
    let (response, latency) = loop {
        let started = std::time::Instant::now();
        let answer = client.search(request(q, args, sources.clone())?).await;
        attempt += 1;
        let response = match answer {
            Ok(r) => r.into_inner(),
            // A router that is briefly unreachable is asked again; any other error is the answer.
            Err(s) if s.code() == tonic::Code::Unavailable && attempt < 3 => continue,
            Err(s) => {
                return Err(Failure::Other(format!(
                    "question {} ({}): {}: {}",
                    q.id,
                    q.user,
                    fedsearch_core::grpc::code_name(s.code()),
                    s.message()
                )));
            }
        };
        let latency = started.elapsed();
        let timed_out = response.sources.iter().any(|s| s.state() == fedsearch_proto::types::SourceState::Timeout);
        if !timed_out || attempt >= 3 {
            break (response, latency);
        }
    };
    let mut answer = answer_of(&response);
    if args.fetch {
        answer.other_ids.extend(fetched_ids(client, &response).await);
    }
    let scores: Scores = metrics::score(q, &answer, args.top_k as usize);
    Ok((QuestionResult::new(q, &answer, scores, &response, latency), response))
}

fn answer_of(r: &SearchResponse) -> Answer {
    let hits = r
        .hits
        .iter()
        .map(|h| Shown {
            ids: std::iter::once(h.id.clone()).chain(h.duplicates.iter().map(|d| d.id.clone())).collect(),
            sources: std::iter::once(h.source.clone()).chain(h.duplicates.iter().map(|d| d.source.clone())).collect(),
            marked_superseded: h.version.as_ref().is_some_and(|v| v.status == "superseded"),
        })
        .collect();
    let selected_sources = r.routing.iter().flat_map(|d| d.selected.iter().map(|s| s.source.clone())).collect();
    let other_ids = r
        .context
        .iter()
        .flat_map(|c| c.items.iter())
        .flat_map(|i| [format!("{}:{}", i.source, i.citation), i.full_text_ref.clone()])
        .collect();
    Answer { hits, selected_sources, other_ids }
}

/// Fetches every hit's full text as the question's user; the ids of what came back.
async fn fetched_ids(client: &mut Client, r: &SearchResponse) -> Vec<String> {
    let mut out = Vec::new();
    for h in r.hits.iter().filter(|h| !h.full_text_ref.is_empty()) {
        let req = GetDocumentRequest { full_text_ref: h.full_text_ref.clone(), ..Default::default() };
        if let Ok(doc) = client.get_document(req).await {
            let doc = doc.into_inner();
            out.push(format!("{}:{}", doc.source, doc.id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn args(extra: &[&str]) -> EvalArgs {
        let mut argv = vec!["fedsearch", "eval", "--questions", "q.jsonl", "--users", "u.yaml", "--secret", "s"];
        argv.extend_from_slice(extra);
        match Cli::parse_from(argv).command {
            Command::Eval(a) => a,
            other => panic!("parsed {other:?}"),
        }
    }

    fn question(as_of: Option<&str>) -> Question {
        let line = match as_of {
            Some(t) => {
                format!(r#"{{"id":"q1","user":"u","question":"昨天的订单","as_of":"{t}","relevant":{{"a":1}}}}"#)
            }
            None => r#"{"id":"q1","user":"u","question":"昨天的订单","relevant":{"a":1}}"#.to_string(),
        };
        serde_json::from_str(&line).unwrap()
    }

    fn as_of_of(q: &Question, a: &EvalArgs) -> Option<i64> {
        request(q, a, Vec::new()).unwrap().into_inner().as_of.map(|t| t.seconds)
    }

    #[test]
    fn a_question_without_as_of_takes_the_default_and_its_own_wins() {
        let seeded = args(&["--default-as-of", "2026-11-30T23:00:00Z"]);
        let own = "2026-07-20T10:00:00+08:00";
        assert_eq!(as_of_of(&question(None), &seeded), Some(1_796_079_600));
        assert_eq!(as_of_of(&question(Some(own)), &seeded), Some(1_784_512_800));
        assert_eq!(as_of_of(&question(None), &args(&[])), None, "no default: the router's clock");
    }

    #[test]
    fn a_default_as_of_that_is_no_time_is_refused() {
        let argv =
            ["fedsearch", "eval", "--questions", "q", "--users", "u", "--secret", "s", "--default-as-of", "yesterday"];
        assert!(Cli::try_parse_from(argv).is_err());
    }
}
