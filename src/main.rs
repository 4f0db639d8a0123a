fn main() -> std::process::ExitCode {
    gpuform::cli::main()
}
