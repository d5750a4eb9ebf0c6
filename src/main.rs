use clap::Parser;

/// mimalloc instead of the system allocator: a request allocates and frees many small
/// blocks across threads, where glibc's malloc spent about a quarter of a listing read
/// (consolidating its free lists among them; docs/performance.md, issue 19).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = rehome::cli::Cli::parse();
    match rehome::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
