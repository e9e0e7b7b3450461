import CSupport
import SlimplayCLI

// Before the first thread starts: glibc gives each thread that allocates an arena of its own.
slimplay_tune_allocator()
SlimplayCommand.runFromCommandLine()
