import SlimplayCLI

SlimplayCommand.main()
