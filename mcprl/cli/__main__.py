from mcprl.cli.main import main

main()
