module gomethods

go 1.19
