//! GetDocument: the full text behind a `full_text_ref`, fetched from its source as the calling
//! user, so the source re-checks permission at this moment.

use fedsearch_core::Identity;
use fedsearch_core::errors::{self, Reason};
use fedsearch_proto::{
    adapter::FetchRequest,
    api::{Document, GetDocumentRequest},
};
use tonic::{Request, Status};
use tracing::Instrument;

use crate::state::RouterState;

pub async fn get(state: &RouterState, user: &Identity, req: GetDocumentRequest) -> Result<Document, Status> {
    let (name, reference) =
        req.full_text_ref.split_once(':').filter(|(s, r)| !s.is_empty() && !r.is_empty()).ok_or_else(|| {
            errors::invalid_field(
                Reason::InvalidArgument,
                "full_text_ref",
                "full_text_ref must look like `<source>:<reference>`",
            )
        })?;
    if reference.len() > 1024 {
        return Err(errors::invalid_field(Reason::InvalidArgument, "full_text_ref", "full_text_ref is too long"));
    }
    // A source the user may not use is indistinguishable from one that does not exist.
    let source = state.registry.get(name).filter(|s| s.permits(user)).ok_or_else(|| {
        errors::status(tonic::Code::NotFound, Reason::UnknownSource, format!("unknown source `{name}`"))
    })?;
    let mut ctx = user.to_user_context();
    ctx.delegated_credential = req.source_credentials.get(name).cloned();
    if let Some(signer) = &source.signer {
        let scope = fedsearch_core::assertion::fetch_scope(reference);
        signer.sign_context(&mut ctx, &source.target, &scope, std::time::SystemTime::now() + source.config.timeout);
    }
    let fetch = FetchRequest { source: source.target.clone(), reference: reference.to_string(), user: Some(ctx) };
    let mut client = source.client.clone();
    let mut call = Request::new(fetch);
    call.set_timeout(source.config.timeout);
    let span = tracing::info_span!("router.fetch", source = %name);
    let rpc = crate::fanout::client_span(&source.config.adapter.url, None, crate::fanout::ADAPTER_FETCH);
    let doc = match client.fetch(call).instrument(rpc).instrument(span).await {
        Ok(r) => r.into_inner(),
        Err(e) => {
            use fedsearch_core::errors::{Reason, status};
            return Err(match e.code() {
                // The caller's token was good (checked at the edge): a source that cannot sign
                // this user in is a permission matter, not "refresh your token".
                tonic::Code::Unauthenticated => status(
                    tonic::Code::PermissionDenied,
                    Reason::NoSourceCredential,
                    format!("source `{name}` has no credential for this user: {}", e.message()),
                ),
                tonic::Code::Unavailable => Status::unavailable(format!("source `{name}` is unavailable")),
                tonic::Code::Unknown | tonic::Code::Internal => Status::internal(format!("source `{name}` failed")),
                code => Status::new(code, e.message().to_string()),
            });
        }
    };
    Ok(Document {
        id: format!("{name}:{}", doc.id),
        source: name.to_string(),
        title: doc.title,
        content: doc.content,
        url: doc.url,
        updated_at: doc.updated_at,
        metadata: doc.metadata,
        doc_type: doc.doc_type,
    })
}
