from hopgraph.cli import main

main()
