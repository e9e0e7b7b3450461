import SlimplayCLI

SlimplayCommand.runFromCommandLine()
