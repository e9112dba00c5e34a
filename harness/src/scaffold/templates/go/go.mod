module {{NAME}}-adapter

go 1.21
