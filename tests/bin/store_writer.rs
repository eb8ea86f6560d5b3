//! The second OS process of the store behaviour tests: runs some of the concurrent writers
//! against a store location and exits 0 when every write succeeded.
//!
//! `store_writer preferences <location> <scope> <first writer> <count>`
//! `store_writer conversations <location> <scope> <first writer> <count>`

use std::process::ExitCode;

use tool_core::store::{open_conversation_store, open_preference_store};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, location, scope, first, count] = args.as_slice() else {
        eprintln!("usage: store_writer preferences|conversations LOCATION SCOPE FIRST COUNT");
        return ExitCode::from(2);
    };
    let (Ok(first), Ok(count)) = (first.parse::<usize>(), count.parse::<usize>()) else {
        eprintln!("store_writer: FIRST and COUNT are numbers");
        return ExitCode::from(2);
    };
    let writers = first..first + count;
    let result = match mode.as_str() {
        "preferences" => tool_tests::store_writers::write_preferences(
            || async {
                match open_preference_store(location, scope).await {
                    Ok(store) => store,
                    Err(error) => {
                        eprintln!("store_writer: cannot open {location}: {error}");
                        std::process::exit(1);
                    }
                }
            },
            writers,
        )
        .await
        .map_err(|error| error.to_string()),
        "conversations" => match open_conversation_store(location).await {
            Ok(store) => tool_tests::store_writers::write_conversations(store, scope, writers)
                .await
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        },
        _ => Err(format!("unknown mode `{mode}`")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("store_writer: {error}");
            ExitCode::FAILURE
        }
    }
}
