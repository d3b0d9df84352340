//! A JSON client for HPCC's ESP WsWorkunits service.
//!
//! Every call is `POST /WsWorkunits/<Method>.json` with form-encoded fields
//! (arrays as `<Name>_i<n>`), answered by `{"<Method>Response": {...}}` —
//! the service uses method names for its response elements, so
//! WUCreateAndUpdate answers `WUCreateAndUpdateResponse` although its
//! response type is WUUpdateResponse. ESP reports failures as an
//! `Exceptions` block `{"Source": .., "Exception": [{"Code", "Message"}]}`,
//! at the top level or inside the response element.
//!
//! Field names are those of HPCC-Platform's esp/scm/ws_workunits.ecm
//! (WUUpdateRequest, WUSubmitRequest, WUInfoRequest, WUResultRequest,
//! WUAbortRequest, ECLWorkunit, ECLException, ECLResult); state names and
//! numbers are those of common/workunit's WUState.
//!
//! - `state`: WUState, from ESP's `State`/`StateID`.
//! - `request`: one request per method used, with its form fields.
//! - `response`: what ESP answers, and its parsing (pure).
//! - `client`: `EspClient`, one HTTP call per method.
//! - `execution`: create, submit and poll a workunit to its end
//!   (`PollPolicy`), aborting it when that fails.

mod client;
mod execution;
pub mod request;
mod response;
mod state;

pub use client::EspClient;
pub use execution::{Execution, PollPolicy};
pub use request::{DEFAULT_TARGET, EspRequest, ResultRef, SERVICE};
pub use response::{
    EclException, ResultMeta, ResultPage, WorkunitInfo, esp_exceptions, parse_created, parse_info,
    parse_response, parse_result,
};
pub use state::WuState;
