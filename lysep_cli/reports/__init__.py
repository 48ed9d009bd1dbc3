"""What the records show: tables, the comparison with the paper, figures, status, studies, verification."""
