use std::{cell::RefCell, rc::Rc};

use tool_core::tool;

/// Count calls.
#[tool]
async fn count(#[context] counter: Rc<RefCell<u32>>) -> u32 {
    *counter.borrow_mut() += 1;
    *counter.borrow()
}

fn main() {}
