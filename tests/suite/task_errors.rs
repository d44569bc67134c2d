//! A task body may return its own errors with `?`: I/O, parse and conversion
//! errors and any boxed error convert into `Error::External`, which the runtime
//! wraps in `Error::TaskFailed` naming the task.

use eigenflow::graph::{Task, TaskGraph};
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::error::Error as _;

fn run_one(
    name: &'static str,
    body: impl FnOnce() -> eigenflow::Result<()> + Send + 'static,
) -> Error {
    let mut g = TaskGraph::new();
    g.add(Task::new(name, move |_| body()));
    Runtime::builder()
        .threads(1)
        .build()
        .run(g)
        .expect_err("the body fails")
}

#[test]
fn io_error_with_question_mark_names_the_task() {
    let path = std::env::temp_dir().join("eigenflow-no-such-dir/none/file.bin");
    let err = run_one("load.input", move || {
        let _bytes = std::fs::read(&path)?;
        Ok(())
    });
    match &err {
        Error::TaskFailed { task, source } => {
            assert_eq!(task, "load.input");
            match source.as_ref() {
                Error::External(e) => {
                    let io = e
                        .downcast_ref::<std::io::Error>()
                        .expect("the io::Error itself");
                    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
                }
                other => panic!("expected External, got {other:?}"),
            }
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("load.input"), "{msg}");
    // The chain reaches the io::Error: TaskFailed -> (transparent) io::Error.
    assert!(err.source().is_some());
}

#[test]
fn parse_errors_and_custom_errors_convert() {
    let err = run_one("parse", || {
        let _n: usize = "twelve".parse()?;
        Ok(())
    });
    assert!(
        matches!(&err, Error::TaskFailed { task, source } if task == "parse" && matches!(**source, Error::External(_))),
        "{err:?}"
    );
    let err = run_one("parse.float", || {
        let _x: f64 = "1.2.3".parse()?;
        Ok(())
    });
    assert!(
        matches!(&err, Error::TaskFailed { task, .. } if task == "parse.float"),
        "{err:?}"
    );

    #[derive(Debug)]
    struct Mine;
    impl std::fmt::Display for Mine {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("my own failure")
        }
    }
    impl std::error::Error for Mine {}
    let err = run_one("mine", || Err(Error::external(Mine)));
    match &err {
        Error::TaskFailed { task, source } if task == "mine" => match source.as_ref() {
            Error::External(e) => assert!(e.downcast_ref::<Mine>().is_some()),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("my own failure"), "{err}");
}

/// `Error` crosses threads and lives in `Box<dyn Error + Send + Sync>` (the
/// caller's own error types can hold it).
#[test]
fn error_is_send_sync_static() {
    fn boxed<E: std::error::Error + Send + Sync + 'static>(
        e: E,
    ) -> Box<dyn std::error::Error + Send + Sync> {
        Box::new(e)
    }
    let b = boxed(Error::Cancelled);
    assert!(b.downcast_ref::<Error>().is_some());
}

#[test]
fn conversion_and_boxed_errors_convert_with_question_mark() {
    // A boxed error of the caller's, through `?` directly.
    let err = run_one("boxed", || {
        let r: Result<(), Box<dyn std::error::Error + Send + Sync>> = Err("no luck".into());
        r?;
        Ok(())
    });
    match &err {
        Error::TaskFailed { task, source } if task == "boxed" => match source.as_ref() {
            Error::External(e) => assert_eq!(e.to_string(), "no luck"),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // Integer narrowing, text decoding and bool parsing.
    let err = run_one("narrow", || {
        let _small: u8 = u8::try_from(300u32)?;
        Ok(())
    });
    let external_message = |err: &Error| match err {
        Error::TaskFailed { source, .. } => match source.as_ref() {
            Error::External(e) => e.to_string(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(
        external_message(&err),
        u8::try_from(300u32).unwrap_err().to_string()
    );
    let err = run_one("utf8", || {
        let _s = String::from_utf8(vec![0xff, 0xfe])?;
        Ok(())
    });
    assert!(
        matches!(&err, Error::TaskFailed { task, .. } if task == "utf8"),
        "{err:?}"
    );
    let err = run_one("flag", || {
        let _b: bool = "yes".parse()?;
        Ok(())
    });
    assert!(
        matches!(&err, Error::TaskFailed { task, .. } if task == "flag"),
        "{err:?}"
    );
    assert!(err.to_string().contains("flag"), "{err}");
}
