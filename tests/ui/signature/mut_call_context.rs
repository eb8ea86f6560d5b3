use tool_core::{CallContext, tool};

/// Change the call.
#[tool]
async fn change(call: &mut CallContext) -> String {
    call.call_id().to_owned()
}

fn main() {}
